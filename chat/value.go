package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"nanoserve/chat/internal/tmpl"
)

// toValue converts a Go value into a template value the way Python would see
// the same data after json.loads: objects keep their key order where Go can
// know it (json.RawMessage, structs), ints stay ints, floats stay floats.
// Plain Go maps have no order; their keys are sorted.
func toValue(v any) (tmpl.Value, error) {
	switch x := v.(type) {
	case nil:
		return tmpl.None(), nil
	case tmpl.Value:
		return x, nil
	case string:
		return tmpl.String(x), nil
	case bool:
		return tmpl.Bool(x), nil
	case int:
		return tmpl.Int(int64(x)), nil
	case int32:
		return tmpl.Int(int64(x)), nil
	case int64:
		return tmpl.Int(x), nil
	case float32:
		return tmpl.Float(float64(x)), nil
	case float64:
		return tmpl.Float(x), nil
	case json.RawMessage:
		return decodeOrdered(x)
	case []any:
		items := make([]tmpl.Value, len(x))
		for i, it := range x {
			val, err := toValue(it)
			if err != nil {
				return tmpl.Undefined(), err
			}
			items[i] = val
		}
		return tmpl.NewList(items), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := tmpl.NewDict()
		for _, k := range keys {
			val, err := toValue(x[k])
			if err != nil {
				return tmpl.Undefined(), err
			}
			d.Dict().SetStr(k, val)
		}
		return d, nil
	}
	// Anything else (structs, typed slices and maps, json.Number...): go
	// through its JSON encoding, which keeps struct field order.
	raw, err := json.Marshal(v)
	if err != nil {
		return tmpl.Undefined(), fmt.Errorf("chat: cannot convert %T to a template value: %w", v, err)
	}
	return decodeOrdered(raw)
}

// decodeOrdered parses one JSON document into a template value, keeping
// object key order (a later duplicate key overwrites in place, as in Python).
func decodeOrdered(raw []byte) (tmpl.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return tmpl.Undefined(), fmt.Errorf("chat: bad JSON value: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return tmpl.Undefined(), errors.New("chat: bad JSON value: trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (tmpl.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return tmpl.Undefined(), err
	}
	switch t := tok.(type) {
	case nil:
		return tmpl.None(), nil
	case bool:
		return tmpl.Bool(t), nil
	case string:
		return tmpl.String(t), nil
	case json.Number:
		return numberValue(t)
	case json.Delim:
		switch t {
		case '[':
			var items []tmpl.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return tmpl.Undefined(), err
				}
				items = append(items, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return tmpl.Undefined(), err
			}
			return tmpl.NewList(items), nil
		case '{':
			d := tmpl.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return tmpl.Undefined(), err
				}
				k, ok := kt.(string)
				if !ok {
					return tmpl.Undefined(), fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeValue(dec)
				if err != nil {
					return tmpl.Undefined(), err
				}
				d.Dict().SetStr(k, v)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return tmpl.Undefined(), err
			}
			return d, nil
		}
	}
	return tmpl.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

// numberValue keeps Python's int/float split: no '.', 'e' or 'E' means int.
func numberValue(n json.Number) (tmpl.Value, error) {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		if i, err := n.Int64(); err == nil {
			return tmpl.Int(i), nil
		}
	}
	f, err := n.Float64()
	if err != nil {
		return tmpl.Undefined(), fmt.Errorf("number %q out of range", s)
	}
	return tmpl.Float(f), nil
}

// messageValue builds the dict a template sees for one message, with keys in
// the order role, content, tool_calls, tool_call_id, name, then Extra (sorted).
// Optional fields that are empty are left out, so `'tool_calls' in message`
// and `message.name is defined` behave as with a Python dict that lacks them.
func messageValue(m Message) (tmpl.Value, error) {
	d := tmpl.NewDict()
	dict := d.Dict()
	dict.SetStr("role", tmpl.String(m.Role))
	dict.SetStr("content", tmpl.String(m.Content))
	if len(m.ToolCalls) > 0 {
		v, err := toValue(m.ToolCalls)
		if err != nil {
			return tmpl.Undefined(), err
		}
		dict.SetStr("tool_calls", v)
	}
	if m.ToolCallID != "" {
		dict.SetStr("tool_call_id", tmpl.String(m.ToolCallID))
	}
	if m.Name != "" {
		dict.SetStr("name", tmpl.String(m.Name))
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := toValue(m.Extra[k])
		if err != nil {
			return tmpl.Undefined(), fmt.Errorf("chat: message field %q: %w", k, err)
		}
		dict.SetStr(k, v)
	}
	return d, nil
}
