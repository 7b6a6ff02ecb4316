package policy

import (
	"slices"
	"testing"
	"unsafe"
)

// TestCommandFieldBits checks that every command field has its own fieldKinds bit, and that the
// commands of a call come back in CommandFields' order whatever the input's key order.
func TestCommandFieldBits(t *testing.T) {
	if bits := int(unsafe.Sizeof(fieldKinds(0))) * 8; commandFieldBit+len(CommandFields) > bits {
		t.Fatalf("%d command fields do not fit in fieldKinds above bit %d", len(CommandFields), commandFieldBit)
	}
	for i, f := range CommandFields {
		if k := knownFields[f]; k&fieldCommand == 0 || k&commandFieldAt(i) == 0 {
			t.Errorf("field %q: kinds %b lack its command bits", f, k)
		}
	}
	input := map[string]any{"path": "/tmp/x"}
	var want []string
	for i := len(CommandFields) - 1; i >= 0; i-- {
		input[CommandFields[i]] = "echo " + CommandFields[i]
	}
	for _, f := range CommandFields {
		want = append(want, "echo "+f)
	}
	got, bad := commandTexts(input)
	if bad != "" || !slices.Equal(got, want) {
		t.Fatalf("commandTexts = %q (bad %q), want %q", got, bad, want)
	}
	if got, bad := commandTexts(map[string]any{"path": "/tmp/x", "cmd": 3}); bad != "cmd" || got != nil {
		t.Fatalf("a number in cmd: %q, bad %q", got, bad)
	}
	if got, _ := commandTexts(map[string]any{"script": []any{"bash", "-c", "ls -l"}}); !slices.Equal(got, []string{"bash -c 'ls -l'"}) {
		t.Fatalf("an argv list: %q", got)
	}
}

// TestCommandTraits checks the one-lookup table against the tables it is built from.
func TestCommandTraits(t *testing.T) {
	names := map[string]bool{}
	for _, m := range []map[string]bool{harmlessBuiltins, noFileArgs, grepLike, urlCommands} {
		for n := range m {
			names[n] = true
		}
	}
	for n := range writeCommands {
		names[n] = true
	}
	if len(commandTraits) != len(names) {
		t.Fatalf("commandTraits has %d programs, the tables %d", len(commandTraits), len(names))
	}
	for n := range names {
		got := commandTraits[n]
		want := commandTrait{harmless: harmlessBuiltins[n], noFiles: noFileArgs[n], write: writeCommands[n],
			grepLike: grepLike[n], url: urlCommands[n]}
		if got != want {
			t.Errorf("%s: %+v, want %+v", n, got, want)
		}
	}
}
