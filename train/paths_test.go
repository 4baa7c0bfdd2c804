package train

import "testing"

func TestPortablePaths(t *testing.T) {
	for _, c := range [][2]string{
		{"/usr/local/go/src (6495 documents, 8 bytes; 340 held out)", "$GOROOT/src (6495 documents, 8 bytes; 340 held out)"},
		{"nanoserve train --corpus /usr/local/go/src --out /home/u/nanoserve/defaultmodel/model/x.gguf --init-from /work/run15/all.gguf",
			"nanoserve train --corpus $GOROOT/src --out defaultmodel/model/x.gguf --init-from all.gguf"},
		{"fine-tuned from /work/run15/all.gguf (2400 steps): --prev=/tmp/b.gguf", "fine-tuned from all.gguf (2400 steps): --prev=b.gguf"},
		{"| (c) /work/prev6.gguf, left to right | 0.084 |", "| (c) prev6.gguf, left to right | 0.084 |"},
		{"held-out 1.15 bits/byte, lr 3e-4→3e-5, relative/path kept", "held-out 1.15 bits/byte, lr 3e-4→3e-5, relative/path kept"},
		{"--corpus /home/u/nanoserve", "--corpus ."},
	} {
		if got := PortablePaths(c[0], "/usr/local/go", "/home/u/nanoserve"); got != c[1] {
			t.Errorf("PortablePaths(%q)\n = %q\nwant %q", c[0], got, c[1])
		}
	}
}
