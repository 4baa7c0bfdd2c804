package server

import (
	"net/http"
	"reflect"
	"testing"
)

// TestProps: GET /props answers llama-server's fields editor plugins read
// (n_ctx, total_slots, model_path, chat_template, build_info) for the
// first model or the one ?model= names; an unknown name is a 404.
func TestProps(t *testing.T) {
	ts := newTestServer(t, nil)
	p := decode[propsResponse](t, get(t, ts.url+"/props"))
	if p.DefaultGenerationSettings.NCtx != ts.eng.CtxSize() || p.DefaultGenerationSettings.NCtx != 128 ||
		p.TotalSlots != ts.eng.Options().MaxSeqs || p.TotalSlots < 1 || p.ModelPath != testModel ||
		p.ChatTemplate != testTemplate || p.BuildInfo == "" || p.ModelAlias != testModel || !p.EndpointSlots || !p.EndpointMetrics ||
		p.EndpointProps || p.IsSleeping || p.Modalities.Vision || p.BOSToken == "" {
		t.Errorf("/props: %+v", p)
	}
	off := newTestServer(t, func(o *Options) { o.NoSlots, o.NoMetrics = true, true })
	if q := decode[propsResponse](t, get(t, off.url+"/props")); q.EndpointSlots || q.EndpointMetrics {
		t.Errorf("/props with /slots and /metrics off: %+v", q)
	}
	if q := decode[propsResponse](t, get(t, ts.url+"/props?model=alias")); !reflect.DeepEqual(q, p) {
		t.Errorf("/props?model=alias: %+v, want %+v", q, p)
	}
	resp, err := http.Get(ts.url + "/props?model=nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/props?model=nope: %d, want 404", resp.StatusCode)
	}
}
