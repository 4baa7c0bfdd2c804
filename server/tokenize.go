package server

// llama-server's token utilities, in its request and response shapes:
//
//	POST /tokenize        {"content", "add_special", "parse_special", "with_pieces"} → {"tokens": [id…]}
//	                      (with_pieces: [{"id", "piece"}…], piece a string, or its bytes when not UTF-8)
//	POST /detokenize      {"tokens": [id…]} → {"content"}
//	POST /apply-template  {"messages": [...]} → {"prompt"}: the chat template's text, generation prompt included
//
// They use the served model's tokenizer and template and need the API key
// when one is set, as /v1/ does.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"
)

type tokenizeRequest struct {
	Model string `json:"model"` // routes the request
	unsupportedParams
	Content      *string `json:"content"`
	AddSpecial   bool    `json:"add_special"`
	ParseSpecial *bool   `json:"parse_special"` // default true, as llama-server
	WithPieces   bool    `json:"with_pieces"`
}

type tokenPiece struct {
	ID    int `json:"id"`
	Piece any `json:"piece"` // string, or []int bytes when the piece alone is not valid UTF-8
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request, req *tokenizeRequest) {
	if req.Content == nil {
		writeError(w, badRequest("content", "content (the text to tokenize) is required"))
		return
	}
	parse := req.ParseSpecial == nil || *req.ParseSpecial
	ids := make([]int, 0, len(*req.Content)/3+2)
	if b, ok := s.tok.BOS(); req.AddSpecial && ok && s.tok.AddBOS() {
		ids = append(ids, b)
	}
	ids = append(ids, s.tok.Encode(*req.Content, parse)...)
	if e, ok := s.tok.EOS(); req.AddSpecial && ok && s.tok.AddEOS() {
		ids = append(ids, e)
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	pieces := make([]tokenPiece, len(ids))
	for i, id := range ids {
		p := s.tok.Piece(id) // the token's own bytes, leading space kept
		pieces[i] = tokenPiece{ID: id, Piece: p}
		if !utf8.ValidString(p) {
			bs := make([]int, len(p))
			for j := range len(p) {
				bs[j] = int(p[j])
			}
			pieces[i].Piece = bs
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
}

type detokenizeRequest struct {
	Model string `json:"model"` // routes the request
	unsupportedParams
	Tokens []json.Number `json:"tokens"`
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request, req *detokenizeRequest) {
	if req.Tokens == nil {
		writeError(w, badRequest("tokens", "tokens (an array of token ids) is required"))
		return
	}
	ids := make([]int, len(req.Tokens))
	for i, n := range req.Tokens {
		id, err := n.Int64()
		if err != nil || id < 0 || id >= int64(s.tok.Size()) {
			writeError(w, badRequest(fmt.Sprintf("tokens[%d]", i), "tokens[%d] = %s is not a token id of this model (0 to %d)", i, n, s.tok.Size()-1))
			return
		}
		ids[i] = int(id)
	}
	writeJSON(w, http.StatusOK, map[string]string{"content": s.tok.Decode(ids)})
}

type applyTemplateRequest struct {
	Model string `json:"model"` // routes the request
	unsupportedParams
	Messages []wireMessage `json:"messages"`
	// llama-server's: the tools the template lists (as the client sent
	// them; no tool-call format is needed to list them), and chat's
	// reasoning fields (add_generation_prompt, default true,
	// continue_final_message, chat_template_kwargs, reasoning_effort).
	Tools json.RawMessage `json:"tools"`
	reasoningParams
}

// handleApplyTemplate answers the prompt a chat request with the same
// messages, tools and reasoning fields would be given (reasoning.go's
// template variables and prefill included), as llama-server does.
func (s *Server) handleApplyTemplate(w http.ResponseWriter, r *http.Request, req *applyTemplateRequest) {
	if s.chat == nil {
		writeError(w, badRequest("messages", "the model %q has no chat template (start the server with --chat-template)", s.names[0]))
		return
	}
	msgs, e := chatMessages(req.Messages, s.toolFormat)
	if e != nil {
		writeError(w, e)
		return
	}
	prompter := *s.chat
	if !isNull(req.Tools) {
		var tools []any
		if err := json.Unmarshal(req.Tools, &tools); err != nil {
			writeError(w, badRequest("tools", "tools must be an array"))
			return
		}
		prompter.Options.Tools = tools
	}
	reply, e := s.reasoningSetup(&req.reasoningParams, &prompter, nil)
	if e != nil {
		writeError(w, e)
		return
	}
	text, skipBOS, e := reply.render(&prompter, msgs)
	if e != nil {
		writeError(w, e)
		return
	}
	// The BOS a template writes is the tokenizer's to add: llama-server
	// answers the text after it.
	if skipBOS {
		text = strings.TrimPrefix(text, prompter.Options.BOS)
	}
	writeJSON(w, http.StatusOK, map[string]string{"prompt": text})
}
