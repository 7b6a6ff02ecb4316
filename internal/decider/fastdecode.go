package decider

import (
	"strconv"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// The fast request decoder. encoding/json's reflection was the largest cost of decoding a
// pre_tool_call request, so a body that checkStrictJSON accepted and that holds only the fields of
// such a request (passport, agent_id, tool_name, tool_input, hook, finish_reason, stop_reason,
// thread_id, call_id, is_subagent) is decoded by hand. Anything else — another field, a value of
// another JSON type, a number float64 cannot hold — makes it give up, and encoding/json decodes the
// body as before (its errors and its answers for the other fields unchanged).
// FuzzFastDecodeMatchesEncodingJSON checks that both give the same request.

// decodeRequestFast decodes data, one JSON object that checkStrictJSON accepted for requestShape,
// into req as json.Unmarshal would. It returns false, leaving req partly filled, when the body
// needs encoding/json.
func decodeRequestFast(data []byte, req *policy.Request) bool {
	d := fastDecoder{data: data}
	i := d.space(0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	i = d.space(i + 1)
	if i < len(data) && data[i] == '}' {
		return d.space(i+1) == len(data)
	}
	for {
		key, next, ok := d.plainKey(i)
		if !ok {
			return false
		}
		i = next
		switch string(key) {
		case "passport":
			i, ok = d.stringField(i, &req.Passport)
		case "agent_id":
			i, ok = d.stringField(i, &req.AgentID)
		case "tool_name":
			i, ok = d.stringField(i, &req.ToolName)
		case "hook":
			i, ok = d.stringField(i, &req.Hook)
		case "finish_reason":
			i, ok = d.stringField(i, &req.FinishReason)
		case "stop_reason":
			i, ok = d.stringField(i, &req.StopReason)
		case "thread_id":
			i, ok = d.stringField(i, &req.ThreadID)
		case "call_id":
			i, ok = d.stringField(i, &req.CallID)
		case "is_subagent":
			i, ok = d.boolField(i, &req.IsSubagent)
		case "tool_input":
			i, ok = d.objectField(i, &req.ToolInput)
		default:
			return false
		}
		if !ok {
			return false
		}
		i = d.space(i)
		if i >= len(data) {
			return false
		}
		switch data[i] {
		case ',':
			i = d.space(i + 1)
		case '}':
			return d.space(i+1) == len(data)
		default:
			return false
		}
	}
}

// fastDecoder reads JSON values that a strict check accepted; every read is still bounds-checked,
// and any surprise is a false ok.
type fastDecoder struct {
	data []byte
}

func (d *fastDecoder) space(i int) int {
	for i < len(d.data) && isSpace(d.data[i]) {
		i++
	}
	return i
}

// plainKey reads `"key" :` at i for a key without escapes; it returns the key's bytes and the
// index of the value.
func (d *fastDecoder) plainKey(i int) ([]byte, int, bool) {
	data := d.data
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	end, plain := scanPlain(data, i+1)
	if !plain || end >= len(data) {
		return nil, i, false
	}
	key := data[i+1 : end]
	i = d.space(end + 1)
	if i >= len(data) || data[i] != ':' {
		return nil, i, false
	}
	return key, d.space(i + 1), true
}

// stringField reads a string (or null, which leaves *dst alone, as encoding/json does) into dst.
func (d *fastDecoder) stringField(i int, dst *string) (int, bool) {
	if i < len(d.data) && d.data[i] == 'n' {
		return d.literal(i, "null")
	}
	s, next, ok := d.str(i)
	if ok {
		*dst = s
	}
	return next, ok
}

// boolField reads true, false or null (no change) into dst.
func (d *fastDecoder) boolField(i int, dst *bool) (int, bool) {
	if i >= len(d.data) {
		return i, false
	}
	switch d.data[i] {
	case 't':
		*dst = true
		return d.literal(i, "true")
	case 'f':
		*dst = false
		return d.literal(i, "false")
	case 'n':
		return d.literal(i, "null")
	}
	return i, false
}

// objectField reads an object into a new map (null: a nil map).
func (d *fastDecoder) objectField(i int, dst *map[string]any) (int, bool) {
	if i >= len(d.data) {
		return i, false
	}
	switch d.data[i] {
	case 'n':
		*dst = nil
		return d.literal(i, "null")
	case '{':
		m, next, ok := d.object(i)
		if ok {
			*dst = m
		}
		return next, ok
	}
	return i, false
}

func (d *fastDecoder) literal(i int, lit string) (int, bool) {
	if !hasLiteral(d.data[i:], lit) {
		return i, false
	}
	return i + len(lit), true
}

// value reads any JSON value as encoding/json decodes it into an interface{}: map[string]any,
// []any, string, float64, bool or nil.
func (d *fastDecoder) value(i int) (any, int, bool) {
	if i >= len(d.data) {
		return nil, i, false
	}
	switch c := d.data[i]; {
	case c == '{':
		return d.object(i)
	case c == '[':
		return d.array(i)
	case c == '"':
		return d.str(i)
	case c == 't':
		next, ok := d.literal(i, "true")
		return true, next, ok
	case c == 'f':
		next, ok := d.literal(i, "false")
		return false, next, ok
	case c == 'n':
		next, ok := d.literal(i, "null")
		return nil, next, ok
	case c == '-' || '0' <= c && c <= '9':
		end, ok := skipNumber(d.data, i)
		if !ok {
			return nil, end, false
		}
		f, err := strconv.ParseFloat(string(d.data[i:end]), 64)
		if err != nil { // out of range: encoding/json's error
			return nil, end, false
		}
		return f, end, true
	}
	return nil, i, false
}

func (d *fastDecoder) object(i int) (map[string]any, int, bool) {
	data := d.data
	m := make(map[string]any)
	i = d.space(i + 1)
	if i < len(data) && data[i] == '}' {
		return m, i + 1, true
	}
	for {
		key, next, ok := d.str(i)
		if !ok {
			return nil, next, false
		}
		i = d.space(next)
		if i >= len(data) || data[i] != ':' {
			return nil, i, false
		}
		var v any
		if v, i, ok = d.value(d.space(i + 1)); !ok {
			return nil, i, false
		}
		m[key] = v
		i = d.space(i)
		if i >= len(data) {
			return nil, i, false
		}
		switch data[i] {
		case ',':
			i = d.space(i + 1)
		case '}':
			return m, i + 1, true
		default:
			return nil, i, false
		}
	}
}

func (d *fastDecoder) array(i int) ([]any, int, bool) {
	data := d.data
	a := make([]any, 0) // encoding/json: [] is an empty slice, not nil
	i = d.space(i + 1)
	if i < len(data) && data[i] == ']' {
		return a, i + 1, true
	}
	for {
		v, next, ok := d.value(i)
		if !ok {
			return nil, next, false
		}
		a = append(a, v)
		i = d.space(next)
		if i >= len(data) {
			return nil, i, false
		}
		switch data[i] {
		case ',':
			i = d.space(i + 1)
		case ']':
			return a, i + 1, true
		default:
			return nil, i, false
		}
	}
}

// str reads a string at i as encoding/json decodes it: escapes resolved, invalid UTF-8 and lone
// surrogates as U+FFFD.
func (d *fastDecoder) str(i int) (string, int, bool) {
	data := d.data
	if i >= len(data) || data[i] != '"' {
		return "", i, false
	}
	start := i + 1
	end, plain := scanPlain(data, start)
	if plain && end < len(data) {
		return string(data[start:end]), end + 1, true
	}
	// Not plain ASCII: find the closing quote (the strict check validated the escapes).
	j := end
	clean := true // no escapes, valid UTF-8: the bytes are the string
	for j < len(data) {
		c := data[j]
		switch {
		case c == '"':
			if clean {
				if !utf8.Valid(data[start:j]) {
					return string(appendUnescaped(nil, data[start:j])), j + 1, true
				}
				return string(data[start:j]), j + 1, true
			}
			return string(appendUnescaped(nil, data[start:j])), j + 1, true
		case c == '\\':
			clean = false
			if j+1 >= len(data) {
				return "", j, false
			}
			switch data[j+1] {
			case 'u':
				if j+6 > len(data) {
					return "", j, false
				}
				for _, h := range data[j+2 : j+6] {
					if !isHex(h) {
						return "", j, false
					}
				}
				j += 6
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			default:
				return "", j, false
			}
		case c < 0x20:
			return "", j, false
		default:
			j++
		}
	}
	return "", j, false
}
