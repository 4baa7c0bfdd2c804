package chat

import (
	"strconv"
	"strings"
	"time"
)

// strftime formats t like Python's datetime.strftime on a naive datetime
// (which is what Hugging Face's strftime_now formats: datetime.now()).
// Supported: %a %A %b %B %h %c %d %e %H %I %j %m %M %p %S %U %w %y %Y %F %T
// %D %R %n %t %%, %Z and %z (empty, as for a naive datetime), and glibc's
// "-" flag (%-d, %-m, %-H ...) that drops zero padding. Unknown directives
// are copied through as glibc does.
func strftime(format string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 >= len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		noPad := false
		if format[i] == '-' && i+1 < len(format) {
			noPad = true
			i++
		}
		num := func(v, width int) {
			s := strconv.Itoa(v)
			if !noPad {
				for len(s) < width {
					s = "0" + s
				}
			}
			b.WriteString(s)
		}
		switch format[i] {
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'c':
			b.WriteString(strftime("%a %b %e %H:%M:%S %Y", t))
		case 'd':
			num(t.Day(), 2)
		case 'e':
			s := strconv.Itoa(t.Day())
			if len(s) < 2 && !noPad {
				s = " " + s
			}
			b.WriteString(s)
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'm':
			num(int(t.Month()), 2)
		case 'M':
			num(t.Minute(), 2)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'S':
			num(t.Second(), 2)
		case 'U':
			num((t.YearDay()+6-int(t.Weekday()))/7, 2)
		case 'w':
			b.WriteString(strconv.Itoa(int(t.Weekday())))
		case 'y':
			num(t.Year()%100, 2)
		case 'Y':
			b.WriteString(strconv.Itoa(t.Year()))
		case 'F':
			b.WriteString(strftime("%Y-%m-%d", t))
		case 'T':
			b.WriteString(strftime("%H:%M:%S", t))
		case 'D':
			b.WriteString(strftime("%m/%d/%y", t))
		case 'R':
			b.WriteString(strftime("%H:%M", t))
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'Z', 'z':
			// naive datetime: no zone
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			if noPad {
				b.WriteByte('-')
			}
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
