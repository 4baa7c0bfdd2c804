package server

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestUnsupportedCaptured: every field of unsupportedFields is captured by
// every route's request type, so a body that sets one is refused whatever
// the route (the front decodes a body once, into the route's type).
func TestUnsupportedCaptured(t *testing.T) {
	for _, rt := range routes() {
		if rt.model == nil {
			continue
		}
		for k, ok := range unsupportedFields {
			if ok == nil {
				continue // any value is accepted
			}
			r := httptest.NewRequest("POST", rt.path, nil)
			req := rt.model.newReq()
			e := decodeRequest(r, []byte(`{"`+k+`": 12345}`), req)
			if o, ok := req.(interface{ ownFields() []string }); ok && slices.Contains(o.ownFields(), k) {
				if e != nil {
					t.Errorf("%s: %s, a field the route reads itself, refused: %+v", rt.path, k, e)
				}
				continue
			}
			if e == nil || e.Param == nil || *e.Param != k || !strings.Contains(e.Message, "not supported") {
				t.Errorf("%s: %s set: %+v", rt.path, k, e)
			}
		}
	}
}
