package chat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Prompt renders with the generation prompt and reports skipBOS exactly
// when the template wrote the BOS text; Discover prefers the user's file,
// then the embedded template, then the folder's files, and fails with
// ErrNoTemplate when there is none.
func TestPrompterAndDiscover(t *testing.T) {
	dir := t.TempDir()
	withBOS := `{{ bos_token }}{% for m in messages %}[{{ m.content }}]{% endfor %}{% if add_generation_prompt %}>{% endif %}`
	plain := `{% for m in messages %}({{ m.content }}){% endfor %}{% if add_generation_prompt %}>{% endif %}`
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(plain), 0o644); err != nil {
		t.Fatal(err)
	}
	user := filepath.Join(t.TempDir(), "t.jinja")
	if err := os.WriteFile(user, []byte(withBOS), 0o644); err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	for _, tc := range []struct {
		src     Source
		text    string
		skipBOS bool
		noTmpl  bool
	}{
		{Source{Path: user, Embedded: plain, ModelDir: dir, BOS: "<s>"}, "<s>[hi]>", true, false},
		{Source{Embedded: withBOS, ModelDir: dir, BOS: "<s>"}, "<s>[hi]>", true, false},
		{Source{ModelDir: dir, BOS: "<s>"}, "(hi)>", false, false},
		{Source{Name: "m"}, "", false, true},
	} {
		p, err := Discover(tc.src)
		if tc.noTmpl {
			if !errors.Is(err, ErrNoTemplate) {
				t.Errorf("%+v: %v, want ErrNoTemplate", tc.src, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		text, skip, err := p.Prompt(msgs)
		if err != nil || text != tc.text || skip != tc.skipBOS {
			t.Errorf("%+v: %q skipBOS=%v (%v), want %q %v", tc.src, text, skip, err, tc.text, tc.skipBOS)
		}
	}
}
