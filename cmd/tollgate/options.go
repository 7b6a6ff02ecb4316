package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	uzap "go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/tollgate-dev/tollgate/internal/decider"
)

// The option groups below are shared by the subcommands. Each is a small struct whose fields hold
// the command's defaults before BindFlags registers its flags (always the same names and usage),
// and which turns the parsed values into what the command needs.

// Log formats (--log-format).
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logOptions choose the format of the operational logs on stderr: --log-format text|json.
type logOptions struct {
	// format is logFormatText or logFormatJSON.
	format string
	// given is true when the command line set the format (the manager otherwise leaves the
	// choice to controller-runtime's --zap-* flags).
	given bool
}

// BindFlags registers --log-format.
func (o *logOptions) BindFlags(fs *flag.FlagSet) {
	fs.Var(logFormatValue{o}, "log-format", "`format` of the operational logs on stderr: text or json")
}

// bindLogJSON registers --log-json, the decider's old boolean spelling of --log-format json.
func (o *logOptions) bindLogJSON(fs *flag.FlagSet) {
	fs.Var(logJSONValue{o}, "log-json", deprecatedPrefix+"log-format json|text")
}

// logger returns a slog logger writing in the chosen format to w.
func (o *logOptions) logger(w io.Writer) *slog.Logger {
	if o.format == logFormatJSON {
		return slog.New(slog.NewJSONHandler(w, nil))
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// zapOptions applies a --log-format given on the command line to controller-runtime's zap options
// (JSON, or text as zap's console encoder); without it the --zap-* flags decide.
func (o *logOptions) zapOptions(z *crzap.Options) {
	if !o.given {
		return
	}
	z.NewEncoder = func(opts ...crzap.EncoderConfigOption) zapcore.Encoder {
		if o.format == logFormatJSON {
			ec := uzap.NewProductionEncoderConfig()
			for _, opt := range opts {
				opt(&ec)
			}
			return zapcore.NewJSONEncoder(ec)
		}
		ec := uzap.NewDevelopmentEncoderConfig()
		for _, opt := range opts {
			opt(&ec)
		}
		return zapcore.NewConsoleEncoder(ec)
	}
}

// logFormatValue is the flag.Value of --log-format.
type logFormatValue struct{ o *logOptions }

func (v logFormatValue) String() string {
	if v.o == nil {
		return ""
	}
	return v.o.format
}

// Set accepts text or json.
func (v logFormatValue) Set(s string) error {
	if s != logFormatText && s != logFormatJSON {
		return fmt.Errorf("%q: want text or json", s)
	}
	v.o.format, v.o.given = s, true
	return nil
}

// logJSONValue is the flag.Value of the deprecated boolean --log-json.
type logJSONValue struct{ o *logOptions }

func (v logJSONValue) String() string {
	if v.o == nil {
		return "false"
	}
	return strconv.FormatBool(v.o.format == logFormatJSON)
}

// Set maps true to json and false to text.
func (v logJSONValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	v.o.format, v.o.given = logFormatText, true
	if b {
		v.o.format = logFormatJSON
	}
	return nil
}

// IsBoolFlag lets --log-json stand alone.
func (logJSONValue) IsBoolFlag() bool { return true }

// kubeOptions load the API server configuration (the one kubeconfig loader of the binary):
// --kubeconfig and, for the manager, the client's rate limits.
type kubeOptions struct {
	kubeconfig string
	// qps and burst are the client's rate limits; zero leaves client-go's defaults (and a negative
	// qps turns client-side rate limiting off).
	qps   float64
	burst int
}

// BindFlags registers --kubeconfig with the command's usage (serve uses it to turn on TokenReview).
func (o *kubeOptions) BindFlags(fs *flag.FlagSet, usage string) {
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, usage)
}

// bindRateFlags registers --kube-api-qps and --kube-api-burst.
func (o *kubeOptions) bindRateFlags(fs *flag.FlagSet) {
	fs.Float64Var(&o.qps, "kube-api-qps", o.qps, "Queries per second to the API server.")
	fs.IntVar(&o.burst, "kube-api-burst", o.burst, "Burst of queries to the API server.")
}

// kubeconfigUsage is the usage of --kubeconfig for commands that talk to the cluster they run in.
const kubeconfigUsage = "kubeconfig file (default: in-cluster config, then $KUBECONFIG)"

// restConfig loads --kubeconfig (else $KUBECONFIG, ~/.kube/config, then the in-cluster config).
// An empty userAgent keeps client-go's default.
func (o *kubeOptions) restConfig(userAgent string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	if userAgent != "" {
		cfg.UserAgent = userAgent
	}
	if o.qps != 0 {
		cfg.QPS = float32(o.qps)
	}
	if o.burst != 0 {
		cfg.Burst = o.burst
	}
	return cfg, nil
}

// clientset returns a Kubernetes clientset for restConfig(userAgent).
func (o *kubeOptions) clientset(userAgent string) (kubernetes.Interface, error) {
	cfg, err := o.restConfig(userAgent)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building Kubernetes client: %w", err)
	}
	return cs, nil
}

// listenOptions are the decision endpoint's addresses: --bind-address and --metrics-bind-address.
type listenOptions struct {
	addr        string
	metricsAddr string
}

// BindFlags registers --bind-address.
func (o *listenOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "bind-address", o.addr,
		"address of the decision API and /healthz, /readyz, /metrics, host:port (:8080 listens on every interface, port 0 picks a free port)")
}

// bindMetricsFlag registers --metrics-bind-address.
func (o *listenOptions) bindMetricsFlag(fs *flag.FlagSet) {
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", o.metricsAddr,
		"serve /metrics on this address instead (empty: on --bind-address)")
}

// decisionLogOptions switch the decision log and its sinks on and say what it holds: the stream
// (--decision-log: the command's stdout or stderr), a rotating file (--decision-log-file), an HTTP
// collector (--decision-log-url), and the masks applied before any of them.
type decisionLogOptions struct {
	enabled      bool
	includeInput bool
	// toolInput is the deprecated --decision-log-tool-input; either flag includes the input.
	toolInput bool
	buffer    int
	masks     maskList
	maskFile  string
	file      decider.FileConfig
	http      decider.HTTPSinkConfig
}

// newDecisionLogOptions returns the defaults, with the stream sink on or off.
func newDecisionLogOptions(stream bool) decisionLogOptions {
	return decisionLogOptions{
		enabled: stream, buffer: decider.DefaultLogBuffer,
		file: decider.FileConfig{MaxSizeMB: 100, MaxBackups: 5},
		http: decider.HTTPSinkConfig{Format: decider.HTTPFormatNDJSON, Buffer: decider.DefaultHTTPSinkBuffer,
			BatchSize: decider.DefaultHTTPSinkBatch, FlushInterval: decider.DefaultHTTPSinkFlushInterval},
	}
}

// BindFlags registers --decision-log, --decision-log-include-input, --decision-log-buffer (and
// the deprecated --decision-log-tool-input), the sinks' flags and --decision-log-mask(-file).
func (o *decisionLogOptions) BindFlags(fs *flag.FlagSet, dest string) {
	fs.BoolVar(&o.enabled, "decision-log", o.enabled, "write one JSON record per decision to "+dest)
	fs.BoolVar(&o.includeInput, "decision-log-include-input", o.includeInput,
		"include tool arguments and rewritten arguments in the decision log (off: no argument value is logged)")
	fs.BoolVar(&o.toolInput, "decision-log-tool-input", o.toolInput, deprecatedPrefix+"decision-log-include-input")
	fs.IntVar(&o.buffer, "decision-log-buffer", o.buffer,
		"decision-log buffer in records (records beyond it are dropped and counted)")
	fs.Var(&o.masks, "decision-log-mask", "remove a field from every decision-log record, or replace its value: "+
		"a JSON pointer or dotted `path`, optionally =VALUE (e.g. /tool_input/password, tool_input.token=\"***\", /dry_run/*/modified_input); repeatable")
	fs.StringVar(&o.maskFile, "decision-log-mask-file", o.maskFile, "read --decision-log-mask rules from `FILE`, one per line (# comments)")
	fs.StringVar(&o.file.Path, "decision-log-file", o.file.Path, "also write the decision log to this `file`, rotated by size")
	fs.IntVar(&o.file.MaxSizeMB, "decision-log-file-max-size", o.file.MaxSizeMB, "rotate the decision-log file beyond this many `MB`")
	fs.IntVar(&o.file.MaxBackups, "decision-log-file-max-backups", o.file.MaxBackups, "rotated decision-log files kept (0: all)")
	fs.IntVar(&o.file.MaxAgeDays, "decision-log-file-max-age", o.file.MaxAgeDays, "remove rotated decision-log files older than this many `days` (0: never)")
	fs.BoolVar(&o.file.Compress, "decision-log-file-compress", o.file.Compress, "gzip rotated decision-log files")
	fs.StringVar(&o.http.URL, "decision-log-url", o.http.URL,
		"also POST the decision log to this `URL` in gzipped batches (OPA's decision-log convention), retrying with backoff")
	fs.StringVar(&o.http.Format, "decision-log-url-format", o.http.Format, "body of the POSTs: ndjson (JSON lines) or array (one JSON array, as OPA)")
	fs.IntVar(&o.http.Buffer, "decision-log-url-buffer", o.http.Buffer,
		"records held for --decision-log-url until the receiver takes them (beyond it, while the receiver is down, records are dropped and counted)")
	fs.IntVar(&o.http.BatchSize, "decision-log-url-batch", o.http.BatchSize, "records per POST at most")
	fs.DurationVar(&o.http.FlushInterval, "decision-log-url-flush-interval", o.http.FlushInterval, "how long a record waits for its batch to fill")
	fs.StringVar(&o.http.TokenFile, "decision-log-url-token-file", o.http.TokenFile, "send the token in `FILE` as a bearer token with each POST (re-read each time)")
}

// on reports whether any sink is on.
func (o *decisionLogOptions) on() bool {
	return o.enabled || o.file.Path != "" || o.http.URL != ""
}

// open returns the decision log with its sinks (the stream w named name, the file, the URL), or nil
// when none is on.
func (o *decisionLogOptions) open(w io.Writer, name string, log *slog.Logger) (*decider.DecisionLog, error) {
	if !o.on() {
		return nil, nil
	}
	masks := []decider.Mask(o.masks)
	if o.maskFile != "" {
		fromFile, err := readMaskFile(o.maskFile)
		if err != nil {
			return nil, err
		}
		masks = append(masks, fromFile...)
	}
	var sinks []decider.Sink
	if o.enabled {
		sinks = append(sinks, decider.NewWriterSink(name, w))
	}
	if o.file.Path != "" {
		sinks = append(sinks, decider.NewFileSink(o.file))
	}
	if o.http.URL != "" {
		cfg := o.http
		cfg.Logger = log
		hs, err := decider.NewHTTPSink(cfg)
		if err != nil {
			return nil, usageError("--decision-log-url: %v", err)
		}
		sinks = append(sinks, hs)
	}
	return decider.NewDecisionLogWith(decider.LogConfig{Sinks: sinks, Buffer: o.buffer,
		IncludeInput: o.includeInput || o.toolInput, Masks: masks})
}

// maskList is the flag.Value of the repeatable --decision-log-mask: each value is one rule.
type maskList []decider.Mask

func (m *maskList) String() string {
	if m == nil {
		return ""
	}
	out := make([]string, len(*m))
	for i, r := range *m {
		out[i] = r.String()
	}
	return strings.Join(out, " ")
}

// Set parses and adds one rule.
func (m *maskList) Set(v string) error {
	r, err := decider.ParseMask(v)
	if err != nil {
		return err
	}
	*m = append(*m, r)
	return nil
}

// readMaskFile reads one mask rule per line; blank lines and lines starting with # are skipped.
func readMaskFile(path string) ([]decider.Mask, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--decision-log-mask-file: %w", err)
	}
	var out []decider.Mask
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := decider.ParseMask(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// tokenReviewOptions configure the TokenReview authenticator of ServiceAccount tokens.
type tokenReviewOptions struct {
	audience  string
	cacheTTL  time.Duration
	cacheSize int
}

// newTokenReviewOptions returns the defaults of the TokenReview flags.
func newTokenReviewOptions() tokenReviewOptions {
	return tokenReviewOptions{audience: decider.DefaultAudience, cacheTTL: 2 * time.Minute, cacheSize: 4096}
}

// BindFlags registers --token-audience, --token-cache-ttl and --token-cache-size.
func (o *tokenReviewOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.audience, "token-audience", o.audience, "audience callers' ServiceAccount tokens must carry (TokenReview)")
	fs.DurationVar(&o.cacheTTL, "token-cache-ttl", o.cacheTTL, "how long a successful TokenReview is cached")
	fs.IntVar(&o.cacheSize, "token-cache-size", o.cacheSize, "maximum number of cached TokenReview results")
}

// authenticator returns the TokenReview authenticator through cs.
func (o *tokenReviewOptions) authenticator(cs kubernetes.Interface) *decider.TokenReviewAuthenticator {
	return decider.NewTokenReviewAuthenticator(cs, decider.TokenReviewConfig{
		Audience: o.audience, TTL: o.cacheTTL, CacheSize: o.cacheSize,
	})
}

// bindDefaultNamespace registers --default-namespace.
func bindDefaultNamespace(fs *flag.FlagSet, ns *string, whenEmpty string) {
	fs.StringVar(ns, "default-namespace", *ns, "namespace of bare passport names (default: "+whenEmpty+")")
}

// manifestOptions are the manifest files of the offline commands: -f/--filename, repeatable.
type manifestOptions struct {
	files pathList
}

// BindFlags registers -f and --filename.
func (o *manifestOptions) BindFlags(fs *flag.FlagSet) {
	fs.Var(&o.files, "f", "GuardrailPolicy/AgentPassport manifest file or directory, a `path` (repeatable; YAML or JSON)")
	fs.Var(&o.files, "filename", "same as -f (a `path`)")
}

// paths returns the files given with -f and as positional arguments; none is a usage error (after
// the command's usage).
func (o *manifestOptions) paths(cio *cmdIO, positional []string) ([]string, error) {
	files := append(o.files, positional...)
	if len(files) == 0 {
		cio.usage()
		return nil, usageError("no manifests: give -f PATH (a file or directory of GuardrailPolicy and AgentPassport manifests)")
	}
	return files, nil
}
