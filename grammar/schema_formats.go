package grammar

import "encoding/json"

// String formats. Each is a regular language over code points, a subset
// of what RFC 3339 / 5321 / 1123 / 4291 / 3986 allow, chosen so that
// every string has a bounded length (formatMaxLen): a constrained answer
// cannot spend its token budget inside one field. What each leaves out:
//
//   - date: February 29 (always; leap years are not tracked).
//   - time, date-time: leap seconds; fractions past 9 digits.
//   - duration: numbers past 6 digits, fractions (as RFC 3339 says).
//   - email: quoted local parts and address literals; the local part is up
//     to three dot-separated atoms of 1-20 characters, the domain two to
//     four labels of 1-32 (so at most 194 characters, within RFC 5321's
//     64 for the local part and 254 for the address).
//   - hostname: one to four labels of 1-32 letters, digits or inner
//     hyphens.
//   - ipv4: dotted decimal without leading zeros (all of it).
//   - ipv6: the full eight-group form, no "::" compression.
//   - uri: http or https, a hostname, up to four path segments of up to 32
//     unreserved characters; no port, query or fragment.
//   - uuid: lower-case hex.

// formatMaxLen is the longest string (in characters) each format's grammar
// allows.
var formatMaxLen = map[string]int{
	"date": 10, "time": 24, "date-time": 35, "duration": 44, "email": 194,
	"hostname": 131, "ipv4": 15, "ipv6": 39, "uuid": 36, "uri": 271,
}

func formatExpr(f string) (expr, bool) {
	d := digits('0', '9')
	hex := class(cpRange{'0', '9'}, cpRange{'a', 'f'})
	date := seq(d, d, d, d, lit("-"), alt(
		seq(alt(seq(lit("0"), class(cpRange{'1', '1'}, cpRange{'3', '3'}, cpRange{'5', '5'}, cpRange{'7', '8'})), seq(lit("1"), class(cpRange{'0', '0'}, cpRange{'2', '2'}))),
			lit("-"), alt(seq(lit("0"), digits('1', '9')), seq(digits('1', '2'), d), seq(lit("3"), digits('0', '1')))),
		seq(alt(seq(lit("0"), class(cpRange{'4', '4'}, cpRange{'6', '6'}, cpRange{'9', '9'})), lit("11")),
			lit("-"), alt(seq(lit("0"), digits('1', '9')), seq(digits('1', '2'), d), lit("30"))),
		seq(lit("02-"), alt(seq(lit("0"), digits('1', '9')), seq(lit("1"), d), seq(lit("2"), digits('0', '8'))))))
	hour := alt(seq(digits('0', '1'), d), seq(lit("2"), digits('0', '3')))
	min60 := seq(digits('0', '5'), d)
	time := seq(hour, lit(":"), min60, lit(":"), min60, opt(seq(lit("."), rep(d, 1, 9))),
		alt(lit("Z"), seq(class(cpRange{'+', '+'}, cpRange{'-', '-'}), hour, lit(":"), min60)))
	alnum := class(cpRange{'0', '9'}, cpRange{'A', 'Z'}, cpRange{'a', 'z'})
	label := seq(alnum, opt(seq(rep(class(cpRange{'0', '9'}, cpRange{'A', 'Z'}, cpRange{'a', 'z'}, cpRange{'-', '-'}), 0, 30), alnum)))
	host := seq(label, rep(seq(lit("."), label), 0, 3))
	// RFC 5322 atext: letters, digits and !#$%&'*+-/=?^_`{|}~
	atext := class(cpRange{'0', '9'}, cpRange{'A', 'Z'}, cpRange{'a', 'z'}, cpRange{'!', '!'}, cpRange{'#', '\''},
		cpRange{'*', '+'}, cpRange{'-', '-'}, cpRange{'/', '/'}, cpRange{'=', '='}, cpRange{'?', '?'}, cpRange{'^', '`'}, cpRange{'{', '~'})
	atom := rep(atext, 1, 20)
	num := rep(d, 1, 6)
	some := func(a, b, c expr) expr { return alt(seq(a, opt(b), opt(c)), seq(b, opt(c)), c) }
	octet := alt(seq(lit("25"), digits('0', '5')), seq(lit("2"), digits('0', '4'), d), seq(lit("1"), d, d), seq(digits('1', '9'), d), d)
	h16 := rep(class(cpRange{'0', '9'}, cpRange{'a', 'f'}, cpRange{'A', 'F'}), 1, 4)
	segment := rep(class(cpRange{'0', '9'}, cpRange{'A', 'Z'}, cpRange{'a', 'z'}, cpRange{'-', '.'}, cpRange{'_', '_'}, cpRange{'~', '~'}), 0, 32)
	switch f {
	case "date":
		return date, true
	case "time":
		return time, true
	case "date-time":
		return seq(date, lit("T"), time), true
	case "duration":
		ymd := some(seq(num, lit("Y")), seq(num, lit("M")), seq(num, lit("D")))
		hms := seq(lit("T"), some(seq(num, lit("H")), seq(num, lit("M")), seq(num, lit("S"))))
		return seq(lit("P"), alt(seq(num, lit("W")), seq(ymd, opt(hms)), hms)), true
	case "email":
		return seq(atom, rep(seq(lit("."), atom), 0, 2), lit("@"), label, rep(seq(lit("."), label), 1, 3)), true
	case "hostname":
		return host, true
	case "ipv4":
		return seq(octet, lit("."), octet, lit("."), octet, lit("."), octet), true
	case "ipv6":
		return seq(h16, rep(seq(lit(":"), h16), 7, 7)), true
	case "uri":
		return seq(lit("http"), opt(lit("s")), lit("://"), host, rep(seq(lit("/"), segment), 0, 4)), true
	case "uuid":
		return seq(rep(hex, 8, 8), lit("-"), rep(hex, 4, 4), lit("-"), rep(hex, 4, 4), lit("-"), rep(hex, 4, 4), lit("-"), rep(hex, 12, 12)), true
	}
	return nil, false
}

// lenRange is the shortest and longest string (in code points) a regular
// expression matches; hi < 0 when unbounded.
func lenRange(e expr) (lo, hi int) {
	switch e := e.(type) {
	case litExpr:
		n := len([]rune(e.s))
		return n, n
	case classExpr:
		return 1, 1
	case seqExpr:
		for _, x := range e.items {
			a, b := lenRange(x)
			lo += a
			if hi >= 0 {
				hi = b + hi
				if b < 0 {
					hi = -1
				}
			}
		}
		return lo, hi
	case altExpr:
		lo = -1
		for _, x := range e.alts {
			a, b := lenRange(x)
			if lo < 0 || a < lo {
				lo = a
			}
			if hi >= 0 && (b < 0 || b > hi) {
				hi = b
			}
		}
		return max(lo, 0), hi
	case repExpr:
		a, b := lenRange(e.e)
		if e.max < 0 || b < 0 {
			return a * e.min, -1
		}
		return a * e.min, b * e.max
	}
	return 0, -1
}

// dropFormatCoveredLengths returns s without the length bounds its format
// already implies (Pydantic's HttpUrl sends maxLength 2083 beside format
// uri, an email field often maxLength 254): they constrain nothing, and
// intersecting them would only multiply states.
func dropFormatCoveredLengths(s *obj) *obj {
	fv, _ := s.get("format")
	f, _ := fv.(string)
	e, ok := formatExpr(f)
	if !ok {
		return s
	}
	flo, fhi := lenRange(e)
	covered := func(kw string) bool {
		v, ok := s.get(kw)
		n, isNum := v.(json.Number)
		x, err := n.Int64()
		if !ok || !isNum || err != nil {
			return false
		}
		if kw == "minLength" {
			return x >= 0 && x <= int64(flo)
		}
		return fhi >= 0 && x >= int64(fhi)
	}
	lo, hi := covered("minLength"), covered("maxLength")
	if !lo && !hi {
		return s
	}
	out := newObj()
	for _, k := range s.keys {
		if k == "minLength" && lo || k == "maxLength" && hi {
			continue
		}
		out.set(k, s.vals[k])
	}
	return out
}
