package chat

import "testing"

// TestChatML renders the fallback template: each message framed by
// <|im_start|>ROLE\n … <|im_end|>\n, the assistant header only when a reply
// is asked for.
func TestChatML(t *testing.T) {
	p, err := ChatML("<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "Book"}, {Role: "user", Content: "Hey"}}
	got, skipBOS, err := p.Prompt(msgs)
	if err != nil {
		t.Fatal(err)
	}
	want := "<|im_start|>system\nBook<|im_end|>\n<|im_start|>user\nHey<|im_end|>\n<|im_start|>assistant\n"
	if got != want || skipBOS {
		t.Fatalf("Prompt = %q (skipBOS %v), want %q", got, skipBOS, want)
	}
	got, err = p.Template.Render(msgs, p.Options)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>system\nBook<|im_end|>\n<|im_start|>user\nHey<|im_end|>\n"; got != want {
		t.Fatalf("without a generation prompt: %q, want %q", got, want)
	}
}
