module nanoserve

go 1.26.0

require (
	github.com/ardanlabs/jinja v1.8.0
	golang.org/x/sys v0.50.0
	golang.org/x/text v0.44.0
)
