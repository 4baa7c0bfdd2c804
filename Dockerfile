# nanoserve: a static, non-root image (pure Go, CGO_ENABLED=0, nothing but the binary).
#
#   docker build -t nanoserve .
#   docker run -p 8080:8080 -v hf:/models nanoserve serve --host 0.0.0.0 --port 8080 \
#       --model Qwen/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M
#
# Models named REPO:QUANT are pulled on first start into $HF_HOME/hub (/models/hub: mount a
# volume there so restarts reuse them). Without --model the built-in model is served.
# deploy/deploy_test.go checks this file against the server (ports, user, static build).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0
RUN go build -trimpath -ldflags="-s -w" -o /out/nanoserve ./cmd/nanoserve

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/nanoserve /nanoserve
ENV HF_HOME=/models
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/nanoserve"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
