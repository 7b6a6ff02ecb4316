package shell

import "testing"

// TestProgInfos checks that the gathered program table agrees with the
// tables it is built from.
func TestProgInfos(t *testing.T) {
	for name := range builtinCodes {
		if info := progInfoOf(name); info.builtin == nil || info.kind&kindSpecial == 0 {
			t.Errorf("%s: builtin handler not found through progInfoOf (kind %b)", name, info.kind)
		}
	}
	for name, k := range progKinds {
		info := progInfoOf(name)
		if info.kind != k {
			t.Errorf("%s: kind %b, want %b", name, info.kind, k)
		}
		if (info.wrap != nil) != (wrappers[name] != nil) || (info.sub != nil) != (subWrappers[name] != nil) ||
			(info.wrapH != nil) != (wrapHandlers[name] != nil) || (info.wrapStart != nil) != (wrapStartHandlers[name] != nil) {
			t.Errorf("%s: wrapper entries differ from the tables", name)
		}
		if k&kindSpecial != 0 && info.builtin == nil && info.interp == nil && info.code == nil {
			t.Errorf("%s: special, but no handler", name)
		}
	}
	for _, c := range []struct {
		name   string
		kind   progKind
		interp *interpSpec
	}{
		{"python3.12", kindSpecial | kindInterp, pythonSpec},
		{"python3", kindSpecial | kindInterp, pythonSpec},
		{"ksh93", kindShell, nil},
		{"bash5.2", kindShell, nil},
		{"find2", 0, nil},
		{"rsync3", 0, nil},
		{"sudo2", 0, nil},
		{"frobnicate", 0, nil},
		{"", 0, nil},
	} {
		info := progInfoOf(c.name)
		if info.kind != c.kind || info.interp != c.interp || info.builtin != nil || info.wrap != nil {
			t.Errorf("%s: kind %b interp %v, want %b %v", c.name, info.kind, info.interp, c.kind, c.interp)
		}
	}
	if u := unknownProg; u.kind != 0 || u.wrap != nil || u.wrapH != nil || u.wrapStart != nil || u.sub != nil ||
		u.builtin != nil || u.interp != nil || u.code != nil || u.aliases != nil || u.fam != nil {
		t.Errorf("unknownProg was written: %+v", *u)
	}
}
