// Drives a live nanoserve server with the official ollama npm client's
// chat and think: true (whole and streamed), think: false, and prints what
// it saw as one JSON object (server/reasoning_npm_test.go reads it).
// Usage: node ollama_think.mjs URL MODEL
import { Ollama } from 'ollama'

const [host, model] = process.argv.slice(2)
const o = new Ollama({ host })
const messages = [{ role: 'user', content: 'What is 2+2?' }]
const out = {}
out.whole = await o.chat({ model, messages, think: true, stream: false })
out.stream = { thinking: '', content: '', parts: 0 }
for await (const part of await o.chat({ model, messages, think: true, stream: true })) {
  out.stream.thinking += part.message.thinking ?? ''
  out.stream.content += part.message.content
  out.stream.parts++
}
out.off = await o.chat({ model, messages, think: false, stream: false })
console.log(JSON.stringify(out))
