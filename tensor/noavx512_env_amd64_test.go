package tensor

// NANOSERVE_NOAVX512 on amd64, the only architecture with zmm kernels (an
// arm64 test binary under qemu could not re-run itself as a child either).

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoAVX512Env checks that NANOSERVE_NOAVX512=1 turns every zmm kernel
// set off (the float kernels, the K-quant and Q8_0 row dots), so an A/B
// run of a whole program really runs the ymm kernels: the test binary
// re-runs itself with the variable set and reports its flags.
func TestNoAVX512Env(t *testing.T) {
	if os.Getenv("NANOSERVE_FLAGS_CHILD") != "" {
		fmt.Printf("flags: avx512=%v kz=%v q8z=%v\n", hasAVX512, hasKZ, hasQ8Z)
		return
	}
	if !hasSIMD {
		t.Skip("no AVX2: no zmm kernels either")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNoAVX512Env$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "NANOSERVE_FLAGS_CHILD=1", "NANOSERVE_NOAVX512=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "flags: avx512=false kz=false q8z=false\n") {
		t.Fatalf("with NANOSERVE_NOAVX512=1 some zmm kernels stay on:\n%s", out)
	}
}
