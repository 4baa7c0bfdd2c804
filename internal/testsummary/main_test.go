package main

import (
	"strings"
	"testing"
)

const stream = `{"Action":"run","Package":"nanoserve/a","Test":"TestOK"}
{"Action":"output","Package":"nanoserve/a","Test":"TestOK","Output":"=== RUN   TestOK\n"}
{"Action":"pass","Package":"nanoserve/a","Test":"TestOK"}
{"Action":"run","Package":"nanoserve/a","Test":"TestData"}
{"Action":"output","Package":"nanoserve/a","Test":"TestData","Output":"    a_test.go:12: shared/ test data not found\n"}
{"Action":"output","Package":"nanoserve/a","Test":"TestData","Output":"--- SKIP: TestData (0.00s)\n"}
{"Action":"skip","Package":"nanoserve/a","Test":"TestData"}
{"Action":"run","Package":"nanoserve/b","Test":"TestBad"}
{"Action":"output","Package":"nanoserve/b","Test":"TestBad","Output":"    b_test.go:7: got 1, want 2\n"}
{"Action":"fail","Package":"nanoserve/b","Test":"TestBad"}
{"Action":"skip","Package":"nanoserve/b","Test":"TestMore"}
{"Action":"output","Package":"nanoserve/b","Test":"TestData2","Output":"    b_test.go:30: shared/ test data not found\n"}
{"Action":"skip","Package":"nanoserve/b","Test":"TestData2"}
{"Action":"output","Package":"nanoserve/b","Output":"FAIL\tnanoserve/b\t0.1s\n"}
{"Action":"fail","Package":"nanoserve/b"}
# nanoserve/c
`

func TestSummarize(t *testing.T) {
	var w strings.Builder
	s, err := Summarize(strings.NewReader(stream), &w)
	if err != nil {
		t.Fatal(err)
	}
	if s.Passed != 1 || s.Failed != 1 || s.Skipped != 3 || s.PackagesFailed != 1 {
		t.Errorf("summary %+v, want 1 passed, 1 failed, 3 skipped, 1 package failed", s)
	}
	if got := s.Skips["shared/ test data not found"]; len(got) != 2 || got[0] != "a.TestData" || got[1] != "b.TestData2" {
		t.Errorf("skips by reason %v", s.Skips)
	}
	if len(s.Skips["(no reason given)"]) != 1 {
		t.Errorf("a skip without output should count under (no reason given): %v", s.Skips)
	}
	out := w.String()
	for _, want := range []string{"got 1, want 2", "FAIL\tnanoserve/b", "# nanoserve/c"} {
		if !strings.Contains(out, want) {
			t.Errorf("output %q lacks %q", out, want)
		}
	}
	var p strings.Builder
	PrintSkips(&p, s)
	if !strings.HasPrefix(p.String(), "     2 skipped: shared/ test data not found (a.TestData, b.TestData2)") {
		t.Errorf("PrintSkips:\n%s", p.String())
	}
}
