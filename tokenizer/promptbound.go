package tokenizer

import (
	"fmt"
	"strings"
)

// Bounding a prompt before tokenizing it.
//
// A prompt longer than the context is refused after tokenizing, but
// tokenizing is the expensive part: one 4 MB word is a single pre-token that
// BPE merges as a whole (seconds, and memory in proportion). Every token
// covers at most maxTokenBytes input bytes (its text, or its decoded bytes),
// so text that longer than maxTokens × maxTokenBytes bytes cannot fit in
// maxTokens tokens and may be refused unread. The bound has to allow for
// normalisation that shrinks text: NFC composes at most three bytes into
// one (a Hangul L+V+T jamo sequence, 9 bytes, becomes one 3-byte syllable),
// SentencePiece's remove_extra_whitespaces drops spaces (they are not
// counted; nor is ASCII whitespace for a vocabulary whose special tokens
// strip the whitespace after them, Vocab.RStrip), and a model that drops or merges unknown input without limit (no
// byte tokens; SentencePiece's run of unknown characters sharing one
// <unk>) has no bound at all, so it is not checked.

// PromptBytesError is CheckPromptBytes' refusal.
type PromptBytesError struct {
	Bytes, MaxTokens, MaxBytes, LongestToken int
}

func (e *PromptBytesError) Error() string {
	return fmt.Sprintf("tokenizer: a text of %d bytes cannot fit in %d tokens (at most %d bytes: the longest token covers %d)",
		e.Bytes, e.MaxTokens, e.MaxBytes, e.LongestToken)
}

// CheckPromptBytes returns a *PromptBytesError when text is too long to
// tokenize to maxTokens tokens or fewer, judged from its byte length alone
// (no tokenizing, O(1) for most models); nil when it may fit or the model has
// no such bound.
func (t *Tokenizer) CheckPromptBytes(text string, maxTokens int) error {
	per := t.maxTokenBytes
	n := len(text)
	switch m := t.m.(type) {
	case *byteLevel:
		if !m.allBytes {
			return nil
		}
		if m.nfc {
			per *= 3
		}
	case *spModel:
		if !m.byteFallback && m.unk >= 0 {
			return nil
		}
		if m.removeExtra {
			n -= strings.Count(text, " ")
		}
	default:
		return nil
	}
	if len(t.rstrip) > 0 {
		// Vocab.RStrip tokens drop the ASCII whitespace after them.
		for i := 0; i < len(text); i++ {
			if isASCIISpace(text[i]) {
				n--
			}
		}
	}
	if limit := maxTokens * per; n > limit {
		return &PromptBytesError{Bytes: len(text), MaxTokens: maxTokens, MaxBytes: limit, LongestToken: per}
	}
	return nil
}

// longestToken is the most bytes one token can stand for in input text:
// the longer of its text (special and user-defined tokens are matched by
// text) and its decoded bytes.
func longestToken(tokens, pieces []string) int {
	n := 1
	for id := range tokens {
		n = max(n, len(tokens[id]), len(pieces[id]))
	}
	return n
}
