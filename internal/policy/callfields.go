package policy

// fieldKinds says which guard readings a tool-input field name takes part in (a field can be both
// a path and a working directory: "dir"). Bits from commandFieldBit up say which of CommandFields
// it is, so that the command fields a call carries are known from one pass over its keys.
type fieldKinds uint16

const (
	fieldCommand fieldKinds = 1 << iota
	fieldPath
	fieldURL
	fieldWorkdir

	commandFieldBit = 8 // fieldKinds bit of CommandFields[0]; CommandFields[i] is bit commandFieldBit+i
)

// commandFieldAt is the fieldKinds bit of CommandFields[i].
func commandFieldAt(i int) fieldKinds { return 1 << (commandFieldBit + i) }

// knownFields maps every field name the guard reads to its kinds. It is built once from the
// exported field lists and never written afterwards.
var knownFields = func() map[string]fieldKinds {
	m := map[string]fieldKinds{}
	for _, list := range []struct {
		names []string
		kind  fieldKinds
	}{{CommandFields, fieldCommand}, {PathFields, fieldPath}, {URLFields, fieldURL}, {WorkdirFields, fieldWorkdir}} {
		for _, f := range list.names {
			m[f] |= list.kind
		}
	}
	for i, f := range CommandFields {
		m[f] |= commandFieldAt(i)
	}
	return m
}()

// presentFields returns the kinds of the fields input carries: one lookup per input key, so that a
// call with a couple of arguments does not pay for every field name the guard knows.
func presentFields(input map[string]any) fieldKinds {
	var k fieldKinds
	for f := range input {
		k |= knownFields[f]
	}
	return k
}
