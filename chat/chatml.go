package chat

// ChatMLSource is the ChatML layout, the template llama-server falls back
// to for a model that has none:
//
//	<|im_start|>ROLE\nCONTENT<|im_end|>\n  per message, then
//	<|im_start|>assistant\n                 when a reply is asked for.
const ChatMLSource = "{%- for message in messages -%}" +
	"{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}" +
	"{%- endfor -%}" +
	"{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"

// ChatML is a Prompter of ChatMLSource with the tokenizer's BOS and EOS
// texts (the template writes neither).
func ChatML(bos, eos string) (*Prompter, error) {
	t, err := Parse(ChatMLSource)
	if err != nil {
		return nil, err
	}
	return &Prompter{Template: t, Options: Options{BOS: bos, EOS: eos}}, nil
}
