package server

// GET /props: llama-server's server properties, which editor plugins
// (llama.vim, llama.vscode) read for the context size and the slots. A
// decoder (the model a ?model= query names; absent: the first) and a sink
// (llama-server's object, the fields the plugins read).

import (
	"net/http"

	"nanoserve/tokenizer"
)

type propsResponse struct {
	DefaultGenerationSettings propsSettings `json:"default_generation_settings"`
	TotalSlots                int           `json:"total_slots"`
	ModelPath                 string        `json:"model_path"` // the served name: the server does not tell its files
	ChatTemplate              string        `json:"chat_template"`
	BuildInfo                 string        `json:"build_info"`
	// What llama-server's own web UI and monitoring read: the model's
	// id, its input modalities (text only here), which optional
	// endpoints answer (/slots, /metrics; POST /props never), the BOS and
	// EOS tokens' text, and whether the server sleeps (it never does).
	ModelAlias      string          `json:"model_alias"`
	Modalities      propsModalities `json:"modalities"`
	EndpointSlots   bool            `json:"endpoint_slots"`
	EndpointProps   bool            `json:"endpoint_props"`
	EndpointMetrics bool            `json:"endpoint_metrics"`
	BOSToken        string          `json:"bos_token"`
	EOSToken        string          `json:"eos_token"`
	IsSleeping      bool            `json:"is_sleeping"`
}

type propsModalities struct {
	Vision bool `json:"vision"`
	Video  bool `json:"video"`
	Audio  bool `json:"audio"`
}

type propsSettings struct {
	NCtx int `json:"n_ctx"`
	// Params are the sampling defaults a request starts from (--temp,
	// --seed, --n-predict; native.go), as llama-server lists them.
	Params map[string]any `json:"params"`
}

func (f *Front) handleProps(w http.ResponseWriter, r *http.Request) {
	lease, e := f.modelFor(r.Context(), r.URL.Query().Get("model"))
	if e != nil {
		writeError(w, e)
		return
	}
	defer lease.Release()
	writeJSON(w, http.StatusOK, lease.Value().props())
}

// props are the model's properties as llama-server reports them.
func (s *Server) props() propsResponse {
	tmpl := ""
	if s.chat != nil {
		tmpl = s.chat.Template.Source()
	}
	return propsResponse{DefaultGenerationSettings: propsSettings{NCtx: s.eng.CtxSize(), Params: s.defaultParams()}, TotalSlots: s.eng.Options().MaxSeqs,
		ModelPath: s.modelFile(), ChatTemplate: tmpl, BuildInfo: "nanoserve " + Version,
		ModelAlias: s.names[0], EndpointSlots: !s.native.noSlots, EndpointMetrics: !s.native.noMetrics,
		BOSToken: s.tokenText(s.tok.BOS()), EOSToken: s.tokenText(s.tok.EOS())}
}

// tokenText is a special token's text ("" when the model has none).
func (s *Server) tokenText(id int, ok bool) string {
	if !ok {
		return ""
	}
	return s.tok.DecodeWith([]int{id}, tokenizer.DecodeOptions{Special: tokenizer.SpecialRender})
}
