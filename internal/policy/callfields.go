package policy

// fieldKinds says which guard readings a tool-input field name takes part in (a field can be both
// a path and a working directory: "dir").
type fieldKinds uint8

const (
	fieldCommand fieldKinds = 1 << iota
	fieldPath
	fieldURL
	fieldWorkdir
)

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
