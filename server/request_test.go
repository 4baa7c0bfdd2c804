package server

import (
	"net/http/httptest"
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
			e := decodeRequest(r, []byte(`{"`+k+`": 12345}`), rt.model.newReq())
			if e == nil || e.Param == nil || *e.Param != k || !strings.Contains(e.Message, "not supported") {
				t.Errorf("%s: %s set: %+v", rt.path, k, e)
			}
		}
	}
}
