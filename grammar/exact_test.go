package grammar

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// matches reports whether the grammar accepts exactly text.
func matches(t *testing.T, c *Constraint, text string) bool {
	t.Helper()
	m, err := c.NewMatcher(0)
	if err != nil {
		t.Fatal(err)
	}
	return m.AcceptBytes([]byte(text)) == nil && m.Accepting()
}

func schemaConstraint(t *testing.T, schema string) *Constraint {
	t.Helper()
	g, err := FromJSONSchema([]byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	v, _ := byteVocab()
	c, err := Compile(g, v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Integer bounds are exact: every integer in a window is accepted iff it
// lies within the bounds (validity tests alone would miss a grammar that
// is too narrow).
func TestIntegerBoundsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for k := 0; k < 25; k++ {
		lo := rng.IntN(1400) - 300
		hi := lo + rng.IntN(1300)
		kinds := [][2]string{{"minimum", "maximum"}, {"exclusiveMinimum", "exclusiveMaximum"}}[k%2]
		c := schemaConstraint(t, fmt.Sprintf(`{"type":"integer","%s":%d,"%s":%d}`, kinds[0], lo, kinds[1], hi))
		if k%2 == 1 {
			lo, hi = lo+1, hi-1
		}
		for n := -400; n <= 1500; n++ {
			if got, want := matches(t, c, fmt.Sprint(n)), n >= lo && n <= hi; got != want {
				t.Fatalf("[%d, %d] (%s): %d accepted=%v", lo, hi, kinds[0], n, got)
			}
		}
	}
	c := schemaConstraint(t, `{"type":"integer","minimum":7}`)
	for _, n := range []int{7, 9, 10, 99, 100, 123456} {
		if !matches(t, c, fmt.Sprint(n)) {
			t.Errorf("minimum 7: %d rejected", n)
		}
	}
	for _, s := range []string{"6", "0", "-1", "07"} {
		if matches(t, c, s) {
			t.Errorf("minimum 7: %s accepted", s)
		}
	}
}

// Number bounds: decimals inside are accepted, outside never.
func TestNumberBounds(t *testing.T) {
	c := schemaConstraint(t, `{"type":"number","minimum":-3,"exclusiveMaximum":5}`)
	for _, s := range []string{"-3", "-2.5", "-0.5", "0", "4.999", "4", "0.25"} {
		if !matches(t, c, s) {
			t.Errorf("%s rejected", s)
		}
	}
	for _, s := range []string{"-3.5", "5", "5.0", "-4", "6", "1e3"} {
		if matches(t, c, s) {
			t.Errorf("%s accepted", s)
		}
	}
}

func TestFormatsExact(t *testing.T) {
	good := map[string][]string{
		"date":      {"2024-02-28", "0001-12-31", "1999-04-30", "2023-11-30", "2020-01-31"},
		"time":      {"23:59:59Z", "00:00:00+05:30", "12:34:56.789-01:00"},
		"date-time": {"2024-06-01T12:00:00Z"},
		"uuid":      {"123e4567-e89b-12d3-a456-426614174000"},
		"duration":  {"P3D", "P1Y2M", "PT5M", "P1DT2H3M4S", "P2W", "P0D"},
		"email":     {"a@b.co", "first.last+tag@mail.example.org", "x_y!#@a-b.c9"},
		"hostname":  {"localhost", "a-b.example.com", "x1.y2.z3.w4"},
		"ipv4":      {"0.0.0.0", "192.168.1.255", "255.255.255.255", "10.0.99.1"},
		"ipv6":      {"2001:db8:0:0:0:0:2:1", "FFFF:0:0:0:0:0:0:1"},
		"uri":       {"https://example.com", "http://a.b/c/d.e_f~g", "https://x.y/"},
	}
	bad := map[string][]string{
		"date":      {"2023-02-29", "2023-02-30", "2023-04-31", "2023-13-01", "2023-00-10", "2023-01-00", "2023-1-01"},
		"time":      {"24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00:00+24:00"},
		"date-time": {"2024-06-01 12:00:00Z", "2024-06-01T12:00Z"},
		"uuid":      {"123e4567e89b12d3a456426614174000", "123e4567-e89b-12d3-a456-42661417400"},
		"duration":  {"P", "PT", "P1H", "P1D2Y", "P1.5D", "PT1D", "1D", "P1W2D"},
		"email":     {"a@b", "a..b@c.d", ".a@b.c", "a.@b.c", "a@-b.c", "a@b-.c", "a b@c.d", "@b.c", "a@b..c", strings.Repeat("a", 21) + "@b.c"},
		"hostname":  {"-a", "a-", "a..b", "a_b", "a.b.c.d.e", strings.Repeat("a", 33)},
		"ipv4":      {"256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.-4"},
		"ipv6":      {"::1", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8:9", "12345::", "g:0:0:0:0:0:0:0"},
		"uri":       {"example.com", "ftp://a.b", "http://", "http://a b", "https://a.b?q=1"},
	}
	for f, ss := range good {
		schema := fmt.Sprintf(`{"type":"string","format":%q}`, f)
		c := schemaConstraint(t, schema)
		v := validator(t, []byte(schema))
		for _, s := range ss {
			if !matches(t, c, `"`+s+`"`) {
				t.Errorf("%s: %q rejected", f, s)
			}
			if !valid(t, v, `"`+s+`"`) {
				t.Errorf("%s: %q is not valid: the test is wrong", f, s)
			}
		}
		for _, s := range bad[f] {
			if matches(t, c, `"`+s+`"`) {
				t.Errorf("%s: %q accepted", f, s)
			}
		}
	}
}

// utf8Seqs covers exactly the encodings of its range: random code points
// are accepted iff inside, and random byte strings it accepts are valid
// UTF-8 inside the range.
func TestUTF8SeqsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	ranges := []cpRange{{0x80, 0x7FF}, {0x7F, 0x800}, {0x3A5, 0x1F60F}, {0xE000, 0x10FFFF}, {0x10000, 0x10FFFF}, {0x41, 0x5A}, {0xFFF, 0x1000}}
	for k := 0; k < 20; k++ {
		a := rune(rng.IntN(0x110000))
		b := a + rune(rng.IntN(0x110000-int(a)))
		ranges = append(ranges, cpRange{a, b})
	}
	in := func(seqs [][]cpRange, p []byte) bool {
		for _, s := range seqs {
			if len(s) != len(p) {
				continue
			}
			ok := true
			for i, r := range s {
				if rune(p[i]) < r.lo || rune(p[i]) > r.hi {
					ok = false
				}
			}
			if ok {
				return true
			}
		}
		return false
	}
	for _, r := range ranges {
		var seqs [][]cpRange
		for _, x := range normRanges([]cpRange{r}) {
			utf8Seqs(x.lo, x.hi, &seqs)
		}
		for i := 0; i < 3000; i++ {
			c := rune(rng.IntN(0x110000))
			if i%3 == 0 {
				c = r.lo + rune(rng.IntN(int(r.hi-r.lo)+1))
			}
			if c >= 0xD800 && c <= 0xDFFF {
				continue
			}
			want := c >= r.lo && c <= r.hi
			if got := in(seqs, []byte(string(c))); got != want {
				t.Fatalf("range %x-%x: %U accepted=%v", r.lo, r.hi, c, got)
			}
		}
		for _, s := range seqs {
			for i := 0; i < 200; i++ {
				p := make([]byte, len(s))
				for j, x := range s {
					p[j] = byte(x.lo + rune(rng.IntN(int(x.hi-x.lo)+1)))
				}
				c, n := utf8.DecodeRune(p)
				if c == utf8.RuneError || n != len(p) || c < r.lo || c > r.hi {
					t.Fatalf("range %x-%x: sequence %v admits % x", r.lo, r.hi, s, p)
				}
			}
		}
	}
}
