module nanoserve

go 1.26.0

require (
	github.com/ardanlabs/jinja v1.8.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)

require github.com/santhosh-tekuri/jsonschema/v6 v6.0.2 // indirect

require (
	github.com/coder/websocket v1.8.15 // indirect
	github.com/openai/openai-go/v3 v3.98.0
	github.com/tidwall/gjson v1.20.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/pretty v1.2.1 // indirect
	github.com/tidwall/sjson v1.2.5 // indirect
)

require (
	github.com/clipperhouse/uax29/v2 v2.7.0 // indirect
	github.com/mattn/go-runewidth v0.0.31 // indirect
	github.com/peterh/liner v1.2.3
)
