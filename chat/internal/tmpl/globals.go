package tmpl

import (
	"errors"
	"fmt"
)

// builtinGlobals are Jinja2's global functions (those chat templates use);
// render variables of the same name shadow them.
var builtinGlobals = map[string]Value{
	"range":     NewFunc("range", gRange),
	"dict":      NewFunc("dict", gDict),
	"namespace": NewFunc("namespace", gNamespace),
	"cycler":    NewFunc("cycler", gCycler),
	"joiner":    NewFunc("joiner", gJoiner),
}

// maxRange is the sandbox's limit on the length of range() (MAX_RANGE).
const maxRange = 100000

func gRange(c *Call) (Value, error) {
	if len(c.Args) < 1 || len(c.Args) > 3 {
		return Value{}, fmt.Errorf("range expected 1 to 3 arguments, got %d", len(c.Args))
	}
	n := make([]int64, len(c.Args))
	for i, a := range c.Args {
		if a.kind != KInt && a.kind != KBool {
			return Value{}, fmt.Errorf("'%s' object cannot be interpreted as an integer", typeName(a))
		}
		n[i] = a.n
	}
	start, stop, step := int64(0), n[0], int64(1)
	if len(n) >= 2 {
		start, stop = n[0], n[1]
	}
	if len(n) == 3 {
		step = n[2]
	}
	if step == 0 {
		return Value{}, errors.New("range() arg 3 must not be zero")
	}
	var count int64
	if step > 0 && stop > start {
		count = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		count = (start - stop - step - 1) / -step
	}
	if count < 0 || count > maxRange {
		return Value{}, fmt.Errorf("range too big: %d items, the sandbox allows %d", count, maxRange)
	}
	if err := c.r.chargeSlots(noPos, count*slotBytes); err != nil {
		return Value{}, err
	}
	items := make([]Value, count)
	for i := range items {
		items[i] = Int(start + int64(i)*step)
	}
	return NewList(items), nil
}

func gDict(c *Call) (Value, error) {
	d := NewDict()
	for _, a := range c.Args {
		switch a.kind {
		case KDict:
			for i := range a.Dict().keys {
				d.Dict().Set(a.Dict().keys[i], a.Dict().vals[i])
			}
		case KList:
			for _, p := range a.List().Items {
				if p.kind != KList || len(p.List().Items) != 2 {
					return Value{}, errors.New("dict: sequence elements must be pairs")
				}
				if !d.Dict().Set(p.List().Items[0], p.List().Items[1]) {
					return Value{}, errors.New("dict: unhashable key")
				}
			}
		default:
			return Value{}, fmt.Errorf("'%s' object is not iterable", typeName(a))
		}
	}
	for _, kw := range c.Kwargs {
		d.Dict().SetStr(kw.Name, kw.Value)
	}
	return d, c.r.chargeSlots(noPos, int64(d.Dict().Len())*2*slotBytes)
}

// gNamespace is namespace(dict?, **kw): an object whose attributes
// {% set ns.attr = ... %} may assign from inside loops.
func gNamespace(c *Call) (Value, error) {
	d, err := gDict(c)
	if err != nil {
		return Value{}, err
	}
	d.kind = KSpace
	return d, nil
}

func gCycler(c *Call) (Value, error) {
	items := append([]Value(nil), c.Args...)
	if len(items) == 0 {
		return Value{}, errors.New("cycler needs at least one item")
	}
	i := 0
	d := NewDict()
	d.Dict().SetStr("next", NewFunc("cycler.next", func(*Call) (Value, error) {
		v := items[i%len(items)]
		i++
		return v, nil
	}))
	d.Dict().SetStr("reset", NewFunc("cycler.reset", func(*Call) (Value, error) { i = 0; return None(), nil }))
	d.kind = KSpace
	return d, nil
}

func gJoiner(c *Call) (Value, error) {
	sep := String(", ")
	if v, ok := c.Arg(0, "sep"); ok {
		sep = v
	}
	used := false
	return NewFunc("joiner", func(*Call) (Value, error) {
		if !used {
			used = true
			return String(""), nil
		}
		return sep, nil
	}), nil
}
