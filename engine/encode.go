package engine

import (
	"fmt"
)

// StartOfDocument is the token an empty prompt becomes: BOS if the
// vocabulary has one (whether or not the model adds it to prompts), else
// the end-of-text token that separates documents.
func (e *Engine) StartOfDocument() (int, bool) {
	if id, ok := e.tok.BOS(); ok && id < e.vocab {
		return id, true
	}
	if id, ok := e.tok.EOS(); ok && id < e.vocab {
		return id, true
	}
	return 0, false
}

// Encode tokenizes a request's prompt as the engine will.
func (e *Engine) Encode(req *Request) ([]int, error) {
	if req.PromptIDs != nil {
		for _, id := range req.PromptIDs {
			if id < 0 || id >= e.tok.Size() || id >= e.vocab {
				return nil, &RequestError{"prompt", fmt.Sprintf("prompt token id %d outside the vocabulary (%d)", id, min(e.tok.Size(), e.vocab))}
			}
		}
		if len(req.PromptIDs) == 0 {
			return nil, &RequestError{"prompt", "empty prompt"}
		}
		return req.PromptIDs, nil
	}
	// Refuse, before tokenizing, a prompt too long in bytes for any
	// tokenization of it to fit the context (tokenizing one 4 MB word costs
	// seconds and hundreds of MB).
	if err := e.tok.CheckPromptBytes(req.Prompt, e.ctx); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPromptTooLong, err)
	}
	var ids []int
	if bos, ok := e.tok.BOS(); ok && e.tok.AddBOS() && !req.NoBOS {
		ids = append(ids, bos)
	}
	ids = append(ids, e.tok.Encode(req.Prompt, req.ParseSpecial)...)
	if len(ids) == 0 {
		// An empty prompt starts a document: BOS where the model has one,
		// else its end-of-text token, which separates training documents
		// (GPT-2 style; the built-in model's BOS is its <|endoftext|>).
		if id, ok := e.StartOfDocument(); ok {
			return []int{id}, nil
		}
		return nil, &RequestError{"prompt", "empty prompt and the model has neither a BOS nor an end-of-text token to start a document with"}
	}
	return ids, nil
}
