package server

// llama-server's prompt forms, which /completion and the embeddings
// endpoints accept beyond OpenAI's four (a string, strings, ids, arrays of
// ids):
//
//	[12, 34, "text", 56]            one prompt mixing ids and text: each
//	                                string is tokenized (special tokens
//	                                parsed) and spliced in; BOS is added
//	                                only when the first element is text
//	["text", [12, 34], [1, "x"]]    several prompts, each any of the forms
//	{"prompt_string": "text"}       a prompt as an object (llama-server's
//	                                multimodal form); "multimodal_data" is
//	                                refused: no model here takes images
//	""                              the empty prompt: BOS alone (refused
//	                                for a tokenizer without BOS)

import (
	"bytes"
	"encoding/json"
)

// llamaPrompts reads a prompt or input field in any of llama-server's
// forms (field names it in errors).
func (s *Server) llamaPrompts(raw json.RawMessage, field string) ([]prompt, *apiError) {
	if isNull(raw) {
		return nil, badRequest(field, "%s is required", field)
	}
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '"', '{':
		p, e := s.llamaPrompt(raw, field)
		if e != nil {
			return nil, e
		}
		return []prompt{p}, nil
	case '[':
	default:
		return nil, badRequest(field, "%s must be a string, an array of token ids and strings, or an array of prompts", field)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, badRequest(field, "%s: %v", field, err)
	}
	if len(elems) == 0 {
		return nil, badRequest(field, "%s is an empty array", field)
	}
	// An array of ids and strings with at least one id is one mixed
	// prompt; otherwise each element is a prompt.
	mixed := false
	for _, el := range elems {
		if c := bytes.TrimSpace(el); len(c) > 0 && (c[0] == '-' || c[0] >= '0' && c[0] <= '9') {
			mixed = true
		}
	}
	if mixed {
		p, e := s.llamaPrompt(raw, field)
		if e != nil {
			return nil, e
		}
		return []prompt{p}, nil
	}
	out := make([]prompt, len(elems))
	for i, el := range elems {
		p, e := s.llamaPrompt(el, field)
		if e != nil {
			return nil, e
		}
		out[i] = p
	}
	return out, nil
}

// llamaPrompt reads one prompt: a string, an object with prompt_string, or
// an array of ids and strings.
func (s *Server) llamaPrompt(raw json.RawMessage, field string) (prompt, *apiError) {
	raw = bytes.TrimSpace(raw)
	var text string
	if json.Unmarshal(raw, &text) == nil {
		if text == "" {
			return s.emptyPrompt(field)
		}
		return prompt{text: text}, nil
	}
	if raw[0] == '{' {
		var obj struct {
			Text       *string         `json:"prompt_string"`
			Multimodal json.RawMessage `json:"multimodal_data"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.Text == nil {
			return prompt{}, badRequest(field, "%s must be an object with a \"prompt_string\" string when it is an object", field)
		}
		if !isNull(obj.Multimodal) {
			return prompt{}, badRequest(field, "multimodal_data is not supported: this model takes text only")
		}
		if *obj.Text == "" {
			return s.emptyPrompt(field)
		}
		return prompt{text: *obj.Text}, nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
		return prompt{}, badRequest(field, "%s must be a string, an array of token ids and strings, or an object with prompt_string", field)
	}
	vocab := s.tok.Size()
	ids := []int{}
	for k, el := range elems {
		var id int
		if json.Unmarshal(el, &id) == nil {
			if id < 0 || id >= vocab {
				return prompt{}, badRequest(field, "%s[%d] = %d is not a token id (vocabulary of %d)", field, k, id, vocab)
			}
			ids = append(ids, id)
			continue
		}
		if json.Unmarshal(el, &text) != nil {
			return prompt{}, badRequest(field, "%s[%d] must be a token id or a string", field, k)
		}
		if b, ok := s.tok.BOS(); k == 0 && ok && s.tok.AddBOS() {
			ids = append(ids, b)
		}
		ids = append(ids, s.tok.Encode(text, true)...)
	}
	if len(ids) == 0 {
		return prompt{}, badRequest(field, "%s has no tokens", field)
	}
	return prompt{ids: ids}, nil
}

// emptyPrompt is the prompt "": the start of a document alone (BOS, else
// the end-of-text token that separates documents), as llama-server embeds
// it.
func (s *Server) emptyPrompt(field string) (prompt, *apiError) {
	if id, ok := s.eng.StartOfDocument(); ok {
		return prompt{ids: []int{id}}, nil
	}
	return prompt{}, badRequest(field, "%s cannot be empty: the model has no BOS or end-of-text token to stand for it", field)
}
