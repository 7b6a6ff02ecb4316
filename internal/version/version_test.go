package version

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}
	tests := []struct {
		name       string
		linker     Info
		bi         debug.BuildInfo
		want       Info
		wantString string
	}{
		{
			name:       "go install of a tagged module",
			bi:         debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}},
			want:       Info{Version: "v0.3.0"},
			wantString: "v0.3.0 (go1.x, linux/amd64)",
		},
		{
			name:       "build from a dirty checkout",
			bi:         debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			want:       Info{Commit: "0123456789abcdef0123", Modified: true},
			wantString: "(devel) (commit 0123456789ab-dirty, go1.x, linux/amd64)",
		},
		{
			name:       "the linker's values win",
			linker:     Info{Version: "v1.0.0", Commit: "feedface"},
			bi:         debug.BuildInfo{Main: debug.Module{Version: "v0.9.0"}, Settings: vcs},
			want:       Info{Version: "v1.0.0", Commit: "feedface"},
			wantString: "v1.0.0 (commit feedface, go1.x, linux/amd64)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := fromBuildInfo(tt.linker, &tt.bi)
			if got != tt.want {
				t.Fatalf("fromBuildInfo = %+v, want %+v", got, tt.want)
			}
			if got.Version == "" {
				got.Version = "(devel)"
			}
			got.GoVersion, got.Platform = "go1.x", "linux/amd64"
			if s := got.String(); s != tt.wantString {
				t.Errorf("String() = %q, want %q", s, tt.wantString)
			}
		})
	}
}

func TestGetReportsTheToolchain(t *testing.T) {
	info := Get()
	if info.GoVersion != runtime.Version() || info.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("Get() = %+v, want Go %s on %s/%s", info, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if info.Version == "" {
		t.Error("Get().Version is empty, want at least (devel)")
	}
}
