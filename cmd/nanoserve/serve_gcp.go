package main

// Google Cloud (Vertex AI) custom containers: with AIP_MODE=PREDICTION the
// platform tells the container where to listen and which routes to serve
// through AIP_* variables, which serve reads as llama-server does:
// AIP_HTTP_PORT replaces --port, AIP_PREDICT_ROUTE (default /predict) is
// the prediction route (server/predict.go), AIP_HEALTH_ROUTE, if set,
// answers as /health.

import (
	"fmt"
	"strconv"
	"strings"

	"nanoserve/server"
)

// gcpEnv applies the AIP_* variables getenv reads to the port and the
// server options; it does nothing unless AIP_MODE is PREDICTION.
func gcpEnv(getenv func(string) string, port *int, o *server.Options) error {
	if getenv("AIP_MODE") != "PREDICTION" {
		return nil
	}
	if p := getenv("AIP_HTTP_PORT"); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 65535 {
			return fmt.Errorf("AIP_HTTP_PORT %q: want a TCP port", p)
		}
		*port = n
	}
	route := func(name, def string) string {
		v := getenv(name)
		if v == "" {
			return def
		}
		if !strings.HasPrefix(v, "/") {
			v = "/" + v
		}
		return v
	}
	o.PredictRoute, o.HealthRoute = route("AIP_PREDICT_ROUTE", "/predict"), route("AIP_HEALTH_ROUTE", "")
	for _, rt := range server.Routes(server.Options{}) {
		if rt.Path == o.PredictRoute {
			return fmt.Errorf("AIP_PREDICT_ROUTE %s is one of the server's own routes", o.PredictRoute)
		}
	}
	return nil
}
