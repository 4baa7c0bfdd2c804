package server

// llama-server's token counting of chat requests: POST
// /chat/completions/input_tokens and /responses/input_tokens (each also
// under /v1) answer {"object":"response.input_tokens","input_tokens":N},
// N the tokens of the prompt the chat template renders for the request
// (Anthropic's count is /v1/messages/count_tokens, anthropic.go).

import (
	"net/http"
)

// inputTokens is the count's answer.
type inputTokens struct {
	Object      string `json:"object"` // "response.input_tokens"
	InputTokens int    `json:"input_tokens"`
}

// countJob writes the number of prompt tokens of j, or e.
func (s *Server) countJob(w http.ResponseWriter, r *http.Request, j *job, e *apiError) {
	if e != nil {
		writeError(w, e)
		return
	}
	ids, err := s.eng.Encode(&j.reqs[0])
	if err != nil {
		writeError(w, s.startError(r.Context(), err, j))
		return
	}
	writeJSON(w, http.StatusOK, inputTokens{Object: "response.input_tokens", InputTokens: len(ids)})
}

func (s *Server) handleChatInputTokens(w http.ResponseWriter, r *http.Request, cr *chatRequest) {
	cr.ctx = r.Context()
	j, e := s.chatJob(cr)
	s.countJob(w, r, j, e)
}

func (s *Server) handleResponsesInputTokens(w http.ResponseWriter, r *http.Request, req *responsesRequest) {
	rr := *req
	prev, e := s.previousResponse(&rr)
	if e != nil {
		writeError(w, e)
		return
	}
	cr, _, e := responsesChat(&rr, prev)
	if e != nil {
		writeError(w, e)
		return
	}
	cr.ctx = r.Context()
	j, e := s.chatJob(cr)
	if e != nil {
		e = responsesParam(e)
	}
	s.countJob(w, r, j, e)
}
