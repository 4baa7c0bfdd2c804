// Drives a live nanoserve server with the official ollama npm client and
// prints what it saw as one JSON object (server/ollama_npm_test.go reads
// it). Usage: node ollama_client.mjs URL MODEL
import { Ollama } from 'ollama'

const [host, model] = process.argv.slice(2)
const o = new Ollama({ host })
const out = {}
const opts = { temperature: 0, num_predict: 12 }
const messages = [{ role: 'user', content: 'Tell me a story' }]

out.version = await o.version()
out.tags = await o.list()
out.show = await o.show({ model })
out.chat = await o.chat({ model, messages, options: opts, stream: false })
out.chatStream = { text: '', parts: 0 }
for await (const part of await o.chat({ model, messages, options: opts, stream: true })) {
  out.chatStream.text += part.message.content
  out.chatStream.parts++
  if (part.done) out.chatStream.last = part
}
out.generate = await o.generate({ model, prompt: 'Once upon a time', raw: true, options: opts, stream: false })
out.generateStream = { text: '', parts: 0 }
for await (const part of await o.generate({ model, prompt: 'Once upon a time', raw: true, options: opts, stream: true })) {
  out.generateStream.text += part.response
  out.generateStream.parts++
  if (part.done) out.generateStream.last = part
}
out.json = await o.generate({ model, prompt: 'Once upon a time', raw: true, format: 'json', options: opts, stream: false })
out.embed = await o.embed({ model, input: ['Once upon a time', 'The little dog'] })
out.ps = await o.ps()
for (const [key, call] of [
  ['unknownModel', () => o.chat({ model: 'no-such-model', messages, stream: false })],
  ['registryPull', () => o.pull({ model: 'llama3.2:1b', stream: false })],
  ['suffix', () => o.generate({ model, prompt: 'a', suffix: 'b', stream: false })],
]) {
  try {
    await call()
    out[key] = { ok: true }
  } catch (e) {
    out[key] = { error: e.error ?? e.message, status: e.status_code }
  }
}
console.log(JSON.stringify(out))
