package decider

import (
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/internal/policy"
)

// Strict JSON: one pass over a request body, before encoding/json decodes it, that rejects what
// parsers read differently. A prompt-injected agent may send a body that Tollgate reads one way and
// the tool (or a Python or JavaScript hop in front of it) reads another:
//
//   - a key repeated in one object ({"command":"ls","command":"rm -rf /"}): encoding/json and
//     JavaScript keep the last value, other parsers the first or both;
//   - keys of one object differing only in case ({"command":"ls","Command":"rm -rf /"}): a map
//     keeps both, while encoding/json fills a struct field from either spelling;
//   - a key matching a field of the request structs only case-insensitively ({"Tool_Name":"bash"}):
//     encoding/json fills ToolName from it, every case-sensitive parser ignores it.
//
// Keys are compared as encoding/json sees them: unescaped ("tool\u005fname" is tool_name), with
// invalid UTF-8 and lone surrogates replaced by U+FFFD, and case-folded as encoding/json folds
// struct field names (simple Unicode folding: "ſ" (U+017F) folds with "s", "K" (U+212A) with "k").
//
// The pass also bounds nesting (maxJSONDepth) and checks the syntax; on a syntax error the caller
// lets encoding/json describe it, so syntax messages stay those of encoding/json. Its cost is a few
// hundred nanoseconds for a typical request and it allocates only for objects with more than
// smallObjectKeys keys.

// maxJSONDepth bounds the nesting of objects and arrays in a request body.
const maxJSONDepth = 64

// maxJSONValues bounds the values (scalars, objects, arrays) in a request body: decoded, each takes
// tens of bytes however short it is written (an array of 500,000 ones is 1 MB of JSON and more than
// 20 MB decoded), so this bounds a body's decoded size to a few MB beyond its own length. A full
// batch of ordinary requests has some tens of thousands.
const maxJSONValues = 200_000

// smallObjectKeys is the number of keys of one object compared pairwise; larger objects index
// their folded keys by a seeded hash (hash/maphash), so that crafted keys cannot make it quadratic.
const smallObjectKeys = 16

// jsonShape describes where encoding/json decodes a JSON value into a Go struct (whose field names
// it matches case-insensitively): fields are the struct's JSON names, elem the shape of an array's
// elements. A nil shape is free-form JSON (map[string]any, any).
type jsonShape struct {
	fields []shapeField
	elem   *jsonShape
	// slots index fields by the top bits of their hash (-1: none), with no two fields in a slot.
	slots []int8
	shift uint
}

// lookup returns the field whose folded name hashes to h, if any.
func (s *jsonShape) lookup(h uint64) *shapeField {
	if len(s.slots) == 0 {
		return nil
	}
	if k := s.slots[h>>s.shift]; k >= 0 && s.fields[k].hash == h {
		return &s.fields[k]
	}
	return nil
}

type shapeField struct {
	name  string
	shape *jsonShape
	bit   uint64 // 1 << index in the shape's fields
	hash  uint64 // keyHash of the folded name
}

func newShape(elem *jsonShape, fields ...shapeField) *jsonShape {
	if len(fields) > 64 {
		panic("jsonShape: more than 64 fields")
	}
	for i := range fields {
		fields[i].hash = keyHash(appendFoldedKey(nil, []byte(fields[i].name)))
		fields[i].bit = 1 << i
	}
	s := &jsonShape{fields: fields, elem: elem}
	if len(fields) == 0 {
		return s
	}
	for size := uint(4); size <= 16; size++ { // 16 slots or more, until no two fields share one
		s.shift = 64 - size
		s.slots = make([]int8, 1<<size)
		for k := range s.slots {
			s.slots[k] = -1
		}
		clash := false
		for i, f := range fields {
			clash = clash || s.slots[f.hash>>s.shift] >= 0
			s.slots[f.hash>>s.shift] = int8(i)
		}
		if !clash {
			return s
		}
	}
	panic("jsonShape: fields with the same folded name")
}

func field(name string, shape *jsonShape) shapeField { return shapeField{name: name, shape: shape} }

// The shapes of the bodies Tollgate decodes; TestShapesMatchStructs keeps them in step with the
// structs' json tags.
var (
	// contentPartShape is an element of a message's content array (policy.Message.UnmarshalJSON).
	contentPartShape = newShape(nil, field("text", nil))
	messageShape     = newShape(nil, field("role", nil), field("content", newShape(contentPartShape)))
	toolCallShape    = newShape(nil, field("name", nil), field("arguments", nil))
	// requestShape is policy.Request: the body of POST /v1/decide and each batch item.
	requestShape = newShape(nil,
		field("passport", nil), field("agent_id", nil), field("tool_name", nil), field("tool_input", nil),
		field("tool_result", nil), field("hook", nil), field("messages", newShape(messageShape)),
		field("finish_reason", nil), field("stop_reason", nil), field("tool_calls", newShape(toolCallShape)),
		field("content", newShape(contentPartShape)), field("thread_id", nil),
		field("call_id", nil), field("is_subagent", nil), field("timestamp", nil))
	// batchShape is batchRequest.
	batchShape = newShape(nil, field("requests", newShape(requestShape)))
	// verifyContextShape names the keys decodeVerify takes out of the verify route's context: a
	// context is free-form tool arguments, but a case variant of one of these is refused too, as it
	// would be a way to make one reader route the call and another ignore it.
	verifyContextShape = newShape(nil, verifyContextFields()...)
	// verifyShape is verifyRequest.
	verifyShape = newShape(nil, field("context", verifyContextShape), field("passport", nil), field("agent_id", nil))
)

func verifyContextFields() []shapeField {
	fs := make([]shapeField, len(verifyContextKeys))
	for i, k := range verifyContextKeys {
		fs[i] = field(k, nil)
	}
	return fs
}

// shapeOf returns the shape of the struct v points to (nil: no struct fields to guard).
func shapeOf(v any) *jsonShape {
	switch v.(type) {
	case *policy.Request:
		return requestShape
	case *batchRequest:
		return batchShape
	case *verifyRequest:
		return verifyShape
	}
	return nil
}

// Kinds of strictIssue.
const (
	issueSyntax    = iota + 1 // not valid JSON (encoding/json says why)
	issueDepth                // nested deeper than maxJSONDepth
	issueDuplicate            // a key repeated in one object
	issueCase                 // two keys of one object differing only in case
	issueFieldCase            // a key matching a struct field only case-insensitively
	issueValues               // more than maxJSONValues values
)

// strictIssue is the first problem checkStrictJSON found.
type strictIssue struct {
	kind int
	// offset is the byte offset of the problem.
	offset int
	// path is the JSON path of the offending key or container ("" for the whole body).
	path string
	// key is the offending key as written (unescaped); other is the key it collides with, or the
	// struct field's spelling for issueFieldCase.
	key, other string
}

// requestError turns the issue into the 400 answer; prefix is prepended to the path.
func (is *strictIssue) requestError(prefix string) *RequestError {
	p := join(prefix, is.path)
	switch is.kind {
	case issueDepth:
		return fieldErr(ErrCodeInvalidJSON, p, "nesting deeper than %d levels", maxJSONDepth)
	case issueValues:
		return fieldErr(ErrCodeInvalidJSON, p, "more than %d JSON values in one body", maxJSONValues)
	case issueDuplicate:
		return fieldErr(ErrCodeDuplicateKey, p, "duplicate key %s: a key may appear only once in an object", quoteKey(is.key))
	case issueCase:
		return fieldErr(ErrCodeDuplicateKey, p, "keys %s and %s differ only in case: keys of one object must differ in more than case",
			quoteKey(is.other), quoteKey(is.key))
	case issueFieldCase:
		return fieldErr(ErrCodeInvalidField, p, "unknown field %s: field names are case-sensitive, want %s",
			quoteKey(is.key), quoteKey(is.other))
	}
	return fieldErr(ErrCodeInvalidJSON, prefix, "malformed JSON at byte %d", is.offset)
}

func quoteKey(k string) string { return strconv.Quote(clip(k)) }

// keyRec is one key of an open object: its bytes between the quotes, and its fold hash.
type keyRec struct {
	start, end int
	hash       uint64
	plain      bool // no escapes and ASCII only: the bytes are the key, and fold is ASCII upper case
}

type strictFrame struct {
	object bool
	// shape of the object (its struct fields), or of the array (elem applies to its elements).
	shape *jsonShape
	// keysFrom is the index in strictChecker.keys of this object's first key; cur the index of the
	// key whose value is being read. For arrays, cur is the index of the current element.
	keysFrom, cur int
	// seen are the struct fields (shapeField.bit) read so far.
	seen uint64
	// folded indexes the keys of an object with more than smallObjectKeys keys by the seeded hash
	// of their folded form.
	folded map[uint64]int
}

type strictChecker struct {
	data     []byte
	depth    int
	values   int  // values started so far
	tracking bool // false once an issue is recorded: only the syntax is checked further
	issue    strictIssue
	keys     []keyRec
	frames   [maxJSONDepth]strictFrame
	// scratch buffers for unescaping (bufU) and folding keys on the slow paths.
	bufU, bufA, bufB []byte
}

// checkStrictJSON checks data (one JSON value) for syntax, nesting depth, duplicate and
// case-colliding keys in every object, and keys matching fields of shape only case-insensitively.
// It returns the first issue, or one of kind 0 when data is fine. A syntax error is reported even
// after another issue: an issue other than issueSyntax and issueDepth means data is valid JSON.
func checkStrictJSON(data []byte, shape *jsonShape) strictIssue {
	c, _ := strictCheckers.Get().(*strictChecker)
	if c == nil {
		c = &strictChecker{keys: make([]keyRec, 0, 64)}
	}
	c.data, c.depth, c.values, c.tracking, c.issue, c.keys = data, 0, 0, true, strictIssue{}, c.keys[:0]
	ok := c.scan(shape)
	issue := c.issue
	if !ok && issue.kind != issueDepth && issue.kind != issueValues {
		issue = strictIssue{kind: issueSyntax, offset: issue.offset}
	}
	c.data = nil
	for d := range c.depth {
		c.frames[d].folded = nil
	}
	// Keep what a typical body needs; let the memory of a huge one go.
	if cap(c.keys) <= 1024 && cap(c.bufU)+cap(c.bufA)+cap(c.bufB) <= 16<<10 {
		strictCheckers.Put(c)
	}
	return issue
}

// strictCheckers recycles checkers (their frames and key records): the pass allocates nothing for
// a typical body.
var strictCheckers sync.Pool

// isSpace reports JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (c *strictChecker) skipSpace(i int) int {
	for i < len(c.data) && isSpace(c.data[i]) {
		i++
	}
	return i
}

// syntax records a syntax error at i and returns false.
func (c *strictChecker) syntax(i int) bool {
	c.issue.offset = i
	return false
}

// scan checks the whole input. It returns false on a syntax error, when nesting is too deep or when
// there are too many values.
func (c *strictChecker) scan(shape *jsonShape) bool {
	i := c.skipSpace(0)
	pending := shape // shape of the next value
	for {
		// A value starts at i.
		if i >= len(c.data) {
			return c.syntax(i)
		}
		if c.values++; c.values > maxJSONValues {
			path := ""
			if c.tracking {
				path = c.path()
			}
			c.issue = strictIssue{kind: issueValues, offset: i, path: path}
			return false
		}
		var ok bool
		if ch := c.data[i]; ch == '{' || ch == '[' {
			var ended bool
			if i, pending, ended, ok = c.open(i, pending); !ok {
				return false
			}
			if !ended {
				continue
			}
		} else if i, ok = c.scalar(i); !ok {
			return false
		}
		// A value ended before i: continue or close the enclosing containers.
		var done bool
		if i, pending, done, ok = c.afterValue(i); !ok || done {
			return ok
		}
	}
}

// open enters the object or array starting at i, whose shape is shape. It returns the index of the
// container's first value and that value's shape, or, for an empty container, the index after it
// and ended set. It returns false on a syntax error or when nesting is too deep.
func (c *strictChecker) open(i int, shape *jsonShape) (next int, pending *jsonShape, ended, ok bool) {
	data := c.data
	if c.depth == maxJSONDepth {
		path := ""
		if c.tracking { // (the current keys are known)
			path = c.path()
		}
		c.issue = strictIssue{kind: issueDepth, offset: i, path: path}
		return i, nil, false, false
	}
	f := &c.frames[c.depth]
	*f = strictFrame{object: data[i] == '{', shape: shape, keysFrom: len(c.keys)}
	c.depth++
	i = c.skipSpace(i + 1)
	if i < len(data) && (data[i] == '}' && f.object || data[i] == ']' && !f.object) {
		c.depth--
		return i + 1, nil, true, true // an empty container is a complete value
	}
	if f.object {
		i, pending, ok = c.key(i, f)
		return i, pending, false, ok
	}
	if f.shape != nil {
		pending = f.shape.elem
	}
	return i, pending, false, true
}

// scalar skips the string, number or literal starting at i and returns the index after it. It
// returns false on a syntax error.
func (c *strictChecker) scalar(i int) (int, bool) {
	data := c.data
	switch ch := data[i]; {
	case ch == '"':
		end, ok := c.skipString(i + 1)
		if !ok {
			return end, c.syntax(end)
		}
		return end, true
	case ch == '-' || '0' <= ch && ch <= '9':
		end, ok := skipNumber(data, i)
		if !ok {
			return end, c.syntax(end)
		}
		return end, true
	case ch == 't':
		if !hasLiteral(data[i:], "true") {
			return i, c.syntax(i)
		}
		return i + 4, true
	case ch == 'f':
		if !hasLiteral(data[i:], "false") {
			return i, c.syntax(i)
		}
		return i + 5, true
	case ch == 'n':
		if !hasLiteral(data[i:], "null") {
			return i, c.syntax(i)
		}
		return i + 4, true
	default:
		return i, c.syntax(i)
	}
}

// afterValue reads what follows a value that ended before i: a comma (and, in an object, the next
// key), or the ends of the enclosing containers. It returns the index of the next value and its
// shape, or done once the input is complete. It returns false on a syntax error.
func (c *strictChecker) afterValue(i int) (next int, pending *jsonShape, done, ok bool) {
	data := c.data
	for {
		i = c.skipSpace(i)
		if c.depth == 0 {
			if i != len(data) {
				return i, nil, false, c.syntax(i)
			}
			return i, nil, true, true
		}
		f := &c.frames[c.depth-1]
		if i >= len(data) {
			return i, nil, false, c.syntax(i)
		}
		ch := data[i]
		if ch == ',' {
			i = c.skipSpace(i + 1)
			if f.object {
				i, pending, ok = c.key(i, f)
				return i, pending, false, ok
			}
			f.cur++
			if f.shape != nil {
				pending = f.shape.elem
			}
			return i, pending, false, true // the next value starts at i
		}
		if f.object && ch != '}' || !f.object && ch != ']' {
			return i, nil, false, c.syntax(i)
		}
		if f.object {
			c.keys = c.keys[:f.keysFrom]
			if f.folded != nil {
				f.folded = nil
			}
		}
		c.depth--
		i++
	}
}

func hasLiteral(b []byte, lit string) bool {
	return len(b) >= len(lit) && string(b[:len(lit)]) == lit
}

// key reads `"key" :` at i (in the object of frame f), checks the key and returns the index of its
// value and the value's shape.
func (c *strictChecker) key(i int, f *strictFrame) (int, *jsonShape, bool) {
	data := c.data
	if i >= len(data) || data[i] != '"' {
		return i, nil, c.syntax(i)
	}
	start := i + 1
	// Plain keys (ASCII, no escapes) are read in place; others take the slow path: unescaped and
	// folded as encoding/json does.
	j, plain := scanPlain(data, start)
	if !plain {
		var ok bool
		if j, ok = c.skipString(j); !ok {
			return j, nil, c.syntax(j)
		}
		j-- // at the closing quote
	}
	if j >= len(data) {
		return j, nil, c.syntax(j)
	}
	end := j // closing quote
	i = c.skipSpace(j + 1)
	if i >= len(data) || data[i] != ':' {
		return i, nil, c.syntax(i)
	}
	i = c.skipSpace(i + 1)
	if !c.tracking {
		return i, nil, true
	}
	rec := keyRec{start: start, end: end, plain: plain}
	if plain {
		rec.hash = keyHashAt(data, start, end)
	} else {
		rec.hash = keyHash(c.foldedKey(&c.bufA, rec))
	}
	h := rec.hash
	idx := len(c.keys)
	c.keys = append(c.keys, rec)
	f.cur = idx
	// Struct fields: an exact match gives the value's shape; a case-insensitive one is refused.
	// Every earlier key folding like a field was the field itself (any other spelling was refused),
	// so the fields seen so far are a bit set, and a field needs no comparison with other keys.
	if f.shape != nil {
		if sf := f.shape.lookup(h); sf != nil {
			key := c.keyBytes(&c.bufA, rec)
			exact := string(key) == sf.name
			if exact || string(appendFoldedKey(c.bufB[:0], key)) == string(appendFoldedKey(nil, []byte(sf.name))) {
				switch {
				case f.seen&sf.bit != 0: // the field again, spelled the same or not
					c.report(f, c.findKey(f, idx, sf.name), idx)
				case !exact:
					c.tracking = false
					c.issue = strictIssue{kind: issueFieldCase, offset: start - 1, path: c.path(), key: string(key), other: sf.name}
				default:
					f.seen |= sf.bit
					return i, sf.shape, true
				}
				return i, nil, true
			}
		}
	}
	// Duplicates and case collisions with the object's earlier keys.
	if prev, found := c.collision(f, idx); found {
		c.report(f, prev, idx)
	}
	return i, nil, true
}

// findKey returns the index of the key of f, before idx, that is exactly name.
func (c *strictChecker) findKey(f *strictFrame, idx int, name string) int {
	for p := f.keysFrom; p < idx; p++ {
		if string(c.keyBytes(&c.bufB, c.keys[p])) == name {
			return p
		}
	}
	return idx // (never)
}

// collision looks for a key of f, before keys[idx], that folds like keys[idx].
func (c *strictChecker) collision(f *strictFrame, idx int) (int, bool) {
	rec := c.keys[idx]
	n := idx - f.keysFrom
	if n < smallObjectKeys {
		for p, k := range c.keys[f.keysFrom:idx] {
			if k.hash == rec.hash && c.sameFold(k, rec) {
				return f.keysFrom + p, true
			}
		}
		return 0, false
	}
	if f.folded == nil {
		f.folded = make(map[uint64]int, 2*smallObjectKeys)
		for p := f.keysFrom; p < idx; p++ {
			f.folded[maphash.Bytes(keySeed, c.foldedKey(&c.bufA, c.keys[p]))] = p
		}
	}
	h := maphash.Bytes(keySeed, c.foldedKey(&c.bufA, rec))
	p, ok := f.folded[h]
	switch {
	case !ok:
		f.folded[h] = idx
		return 0, false
	case c.sameFold(c.keys[p], rec):
		return p, true
	}
	// Two folded keys with the same seeded 64-bit hash (never seen in practice): compare them all.
	for p := f.keysFrom; p < idx; p++ {
		if c.sameFold(c.keys[p], rec) {
			return p, true
		}
	}
	return 0, false
}

// keySeed seeds the hashes of large objects' keys, so that a body cannot be built to collide.
var keySeed = maphash.MakeSeed()

// report records a duplicate or case collision of keys[idx] with keys[prev] in frame f. The path
// names the earlier key: the field whose value the later one would override or shadow.
func (c *strictChecker) report(f *strictFrame, prev, idx int) {
	first := string(c.keyBytes(&c.bufA, c.keys[prev]))
	second := string(c.keyBytes(&c.bufB, c.keys[idx]))
	kind := issueCase
	if first == second {
		kind = issueDuplicate
	}
	f.cur = prev
	c.issue = strictIssue{kind: kind, offset: c.keys[idx].start - 1, path: c.path(), key: second, other: first}
	f.cur = idx
	c.tracking = false
}

func (c *strictChecker) sameFold(a, b keyRec) bool {
	if a.plain && b.plain {
		x, y := c.data[a.start:a.end], c.data[b.start:b.end]
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if upperASCII(x[i]) != upperASCII(y[i]) {
				return false
			}
		}
		return true
	}
	return string(c.foldedKey(&c.bufA, a)) == string(c.foldedKey(&c.bufB, b))
}

func upperASCII(b byte) byte {
	if 'a' <= b && b <= 'z' {
		return b - ('a' - 'A')
	}
	return b
}

// keyBytes returns the key as encoding/json reads it, in *buf when it must be unescaped.
func (c *strictChecker) keyBytes(buf *[]byte, k keyRec) []byte {
	if k.plain {
		return c.data[k.start:k.end]
	}
	*buf = c.unescape((*buf)[:0], k.start, k.end)
	return *buf
}

// foldedKey returns the key folded as encoding/json folds field names, in *buf (bufA or bufB).
func (c *strictChecker) foldedKey(buf *[]byte, k keyRec) []byte {
	*buf = appendFoldedKey((*buf)[:0], c.keyBytes(&c.bufU, k))
	return *buf
}

// path returns the JSON path of the value being read: the current key or index of every open
// container. It is only built for an answer.
func (c *strictChecker) path() string {
	var b strings.Builder
	for d := 0; d < c.depth; d++ {
		f := &c.frames[d]
		if f.object {
			writeKeyPath(&b, string(c.keyBytes(&c.bufU, c.keys[f.cur])))
			continue
		}
		b.WriteByte('[')
		b.WriteString(strconv.Itoa(f.cur))
		b.WriteByte(']')
	}
	return b.String()
}

// writeKeyPath appends .key, or ["key"] for a key that is not a plain name.
func writeKeyPath(b *strings.Builder, key string) {
	simple := key != ""
	for i := 0; i < len(key) && simple; i++ {
		ch := key[i]
		simple = ch == '_' || ch == '-' || ch == '$' || '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z'
	}
	if simple && len(key) <= 64 {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(key)
		return
	}
	b.WriteByte('[')
	b.WriteString(strconv.Quote(clip(key)))
	b.WriteByte(']')
}

// skipString scans a string whose opening quote is before i and returns the index after its
// closing quote; ok is false (with the offending index) when it is malformed.
func (c *strictChecker) skipString(i int) (int, bool) {
	data := c.data
	for i < len(data) {
		for i+8 <= len(data) {
			if m := special8(binary.LittleEndian.Uint64(data[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		if i >= len(data) {
			break
		}
		b := data[i]
		switch {
		case b == '"':
			return i + 1, true
		case b == '\\':
			if i+1 >= len(data) {
				return len(data), false
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(data) {
					return len(data), false
				}
				for _, h := range data[i+2 : i+6] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 6
			default:
				return i, false
			}
		case b < 0x20:
			return i, false
		default:
			i++
		}
	}
	return i, false
}

func isHex(b byte) bool { return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F' }

// skipNumber scans a JSON number at i.
func skipNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && '1' <= data[i] && data[i] <= '9':
		for i++; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return i, false
		}
		for i++; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return i, false
		}
		for i++; i < len(data) && '0' <= data[i] && data[i] <= '9'; i++ {
		}
	}
	return i, true
}

// unescape appends the string data[start:end] (between its quotes, already checked) as
// encoding/json decodes it (appendUnescaped).
func (c *strictChecker) unescape(out []byte, start, end int) []byte {
	return appendUnescaped(out, c.data[start:end])
}

// appendUnescaped appends s, the bytes between a JSON string's quotes (its escapes already
// checked), as encoding/json decodes it: escapes resolved, invalid UTF-8 and lone surrogates as
// U+FFFD.
func appendUnescaped(out, s []byte) []byte {
	for r := 0; r < len(s); {
		ch := s[r]
		switch {
		case ch == '\\':
			switch s[r+1] {
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rr := hex4(s[r+2 : r+6])
				r += 6
				if utf16.IsSurrogate(rr) {
					if r+6 <= len(s) && s[r] == '\\' && s[r+1] == 'u' {
						if dec := utf16.DecodeRune(rr, hex4(s[r+2:r+6])); dec != unicode.ReplacementChar {
							r += 6
							out = utf8.AppendRune(out, dec)
							continue
						}
					}
					rr = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, rr)
				continue
			default: // " \ /
				out = append(out, s[r+1])
			}
			r += 2
		case ch < utf8.RuneSelf:
			out = append(out, ch)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			out = utf8.AppendRune(out, rr)
			r += size
		}
	}
	return out
}

func hex4(b []byte) rune {
	var r rune
	for _, h := range b {
		switch {
		case '0' <= h && h <= '9':
			h -= '0'
		case 'a' <= h && h <= 'f':
			h -= 'a' - 10
		default:
			h -= 'A' - 10
		}
		r = r*16 + rune(h)
	}
	return r
}

// appendFoldedKey appends key folded as encoding/json folds struct field names (foldName): ASCII
// letters upper case, other runes the smallest rune of their simple-folding orbit.
func appendFoldedKey(out, key []byte) []byte {
	for i := 0; i < len(key); {
		if ch := key[i]; ch < utf8.RuneSelf {
			out = append(out, upperASCII(ch))
			i++
			continue
		}
		r, n := utf8.DecodeRune(key[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special8 has the high bit set in each byte of x that is '"', '\\' or a control character
// (where a string scan must stop); the lowest such bit is exact (borrows only flag bytes above a
// real match), so bits.TrailingZeros64/8 is the index of the first such byte.
func special8(x uint64) uint64 {
	q := x ^ (lsb * '"')
	b := x ^ (lsb * '\\')
	return ((q-lsb)&^q | (b-lsb)&^b | (x-lsb*0x20)&^x) & msb
}

// scanPlain scans a string from i (after its opening quote) while it is plain: ASCII without
// escapes. It returns the index of the closing quote and true, or the index of the first byte
// that is not plain and false.
func scanPlain(data []byte, i int) (int, bool) {
	for i+8 <= len(data) {
		x := binary.LittleEndian.Uint64(data[i:])
		if m := special8(x) | x&msb; m != 0 {
			i += bits.TrailingZeros64(m) / 8
			return i, data[i] == '"'
		}
		i += 8
	}
	for ; i < len(data); i++ {
		switch b := data[i]; {
		case b == '"':
			return i, true
		case b < 0x20 || b == '\\' || b >= utf8.RuneSelf:
			return i, false
		}
	}
	return i, false
}

// keyHash hashes a folded key for comparisons (equal folded keys have equal hashes): 8 bytes at
// a time, the last word zero-padded, with bit 5 of every byte cleared, so that ASCII upper-casing
// changes nothing and a plain key can be hashed in place (keyHashAt) without folding it first.
func keyHash(b []byte) uint64 {
	h := uint64(len(b)) * 0x9E3779B97F4A7C15
	for ; len(b) >= 8; b = b[8:] {
		h = mixWord(h, binary.LittleEndian.Uint64(b))
	}
	if len(b) > 0 {
		var tail [8]byte
		copy(tail[:], b)
		h = mixWord(h, binary.LittleEndian.Uint64(tail[:]))
	}
	return h ^ h>>32
}

// keyHashAt is keyHash(data[start:end]), reading past end (within data) instead of copying the
// last partial word.
func keyHashAt(data []byte, start, end int) uint64 {
	h := uint64(end-start) * 0x9E3779B97F4A7C15
	i := start
	for ; i+8 <= end; i += 8 {
		h = mixWord(h, binary.LittleEndian.Uint64(data[i:]))
	}
	if n := end - i; n > 0 {
		if i+8 > len(data) {
			return keyHash(data[start:end])
		}
		h = mixWord(h, binary.LittleEndian.Uint64(data[i:])&(1<<(8*n)-1))
	}
	return h ^ h>>32
}

func mixWord(h, w uint64) uint64 {
	h = (h ^ w&^(lsb*0x20)) * 0xff51afd7ed558ccd
	return h ^ h>>29
}
