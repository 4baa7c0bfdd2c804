// Pulls a model from a live nanoserve server with the official ollama npm
// client, streamed, and prints every progress part it received and the
// models listed afterwards as one JSON object (server/ollama_pull_npm_test.go
// reads it). Usage: node ollama_pull_client.mjs URL MODEL
import { Ollama } from 'ollama'

const [host, model] = process.argv.slice(2)
const o = new Ollama({ host })
const parts = []
for await (const part of await o.pull({ model, stream: true })) parts.push(part)
const tags = (await o.list()).models.map((m) => m.name)
console.log(JSON.stringify({ parts, tags }))
