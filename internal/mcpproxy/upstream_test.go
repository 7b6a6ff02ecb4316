package mcpproxy

import (
	"strings"
	"testing"
)

func TestParseUpstreams(t *testing.T) {
	ups, err := ParseUpstreams(" github=https://api.example.com/mcp , fs=http://127.0.0.1:3000/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if len(ups) != 2 || ups[0].Name != "github" || ups[0].URL != "https://api.example.com/mcp" || ups[1].Name != "fs" {
		t.Fatalf("ParseUpstreams = %+v", ups)
	}
	for in, want := range map[string]string{
		"":                               "no upstream",
		"github":                         "want name=URL",
		"GitHub=https://x":               "upstream name",
		"a__b=https://x":                 "upstream name",
		"github=ftp://x":                 "http or https",
		"github=https://":                "http or https",
		"a=http://x,a=http://y":          "named twice",
		strings.Repeat("a", 64) + "=h:/": "upstream name",
	} {
		if _, err := ParseUpstreams(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseUpstreams(%q) error = %v, want %q", in, err, want)
		}
	}
}
