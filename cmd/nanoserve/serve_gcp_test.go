package main

import (
	"testing"

	"nanoserve/server"
)

// TestGCPEnv: under AIP_MODE=PREDICTION the AIP_* variables set the port
// and the prediction and health routes; otherwise they are ignored.
func TestGCPEnv(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	port, o := 8080, server.Options{}
	if err := gcpEnv(env(map[string]string{"AIP_HTTP_PORT": "9000"}), &port, &o); err != nil || port != 8080 || o.PredictRoute != "" {
		t.Errorf("without AIP_MODE: %d %+v %v", port, o.PredictRoute, err)
	}
	err := gcpEnv(env(map[string]string{"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": "9000", "AIP_HEALTH_ROUTE": "healthz"}), &port, &o)
	if err != nil || port != 9000 || o.PredictRoute != "/predict" || o.HealthRoute != "/healthz" {
		t.Errorf("AIP_MODE=PREDICTION: %d %q %q %v", port, o.PredictRoute, o.HealthRoute, err)
	}
	for _, bad := range []map[string]string{{"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": "x"}, {"AIP_MODE": "PREDICTION", "AIP_PREDICT_ROUTE": "/v1/completions"}} {
		if err := gcpEnv(env(bad), &port, &o); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
