package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// OTLP protocols (--otlp-protocol, OTEL_EXPORTER_OTLP_PROTOCOL).
const (
	otlpHTTP = "http/protobuf"
	otlpGRPC = "grpc"
)

// tracingOptions switch OpenTelemetry tracing on: one span per decision, exported over OTLP. Tracing
// is off unless --otlp-endpoint or the standard OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) names a collector; OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none keep it off. The other standard variables apply as the OpenTelemetry
// SDK defines them: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG) (default
// parentbased_always_on), OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _CERTIFICATE, OTEL_BSP_*.
type tracingOptions struct {
	endpoint string
	protocol string
	insecure bool
	// service is the default service.name (OTEL_SERVICE_NAME wins).
	service string
}

// BindFlags registers --otlp-endpoint, --otlp-protocol and --otlp-insecure.
func (o *tracingOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.endpoint, "otlp-endpoint", o.endpoint,
		"export a span per decision to this OTLP collector `URL` (e.g. http://otel-collector:4318); "+
			"default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, $OTEL_EXPORTER_OTLP_ENDPOINT; empty: tracing off")
	fs.StringVar(&o.protocol, "otlp-protocol", o.protocol,
		"OTLP protocol: http/protobuf or grpc (default $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL, $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf)")
	fs.BoolVar(&o.insecure, "otlp-insecure", o.insecure,
		"send OTLP without TLS even when the endpoint has no http:// scheme (gRPC host:port)")
}

// enabled reports whether tracing is on, from the flags and the environment.
func (o *tracingOptions) enabled() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return o.endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// resolvedProtocol is the protocol from the flag, else the environment, else http/protobuf.
func (o *tracingOptions) resolvedProtocol() (string, error) {
	p := o.protocol
	for _, env := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p == "" {
			p = os.Getenv(env)
		}
	}
	switch p {
	case "", otlpHTTP:
		return otlpHTTP, nil
	case otlpGRPC:
		return otlpGRPC, nil
	}
	return "", usageError("--otlp-protocol %q: want http/protobuf or grpc", p)
}

// tracerProvider returns the tracer provider of the decision spans and its shutdown (which flushes
// the spans not exported yet), or a nil provider and a no-op shutdown when tracing is off.
func (o *tracingOptions) tracerProvider(ctx context.Context, log *slog.Logger) (trace.TracerProvider, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	if !o.enabled() {
		return nil, noop, nil
	}
	proto, err := o.resolvedProtocol()
	if err != nil {
		return nil, noop, err
	}
	exp, err := o.exporter(ctx, proto)
	if err != nil {
		return nil, noop, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", o.service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, noop, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("OpenTelemetry", "err", err) }))
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	where := o.endpoint
	if where == "" {
		where = "$OTEL_EXPORTER_OTLP_ENDPOINT"
	}
	log.Info("tracing on: a span per decision, exported over OTLP", "endpoint", where, "protocol", proto)
	return tp, tp.Shutdown, nil
}

// exporter returns the OTLP exporter: --otlp-endpoint when given, else the exporter's own reading of
// the OTEL_EXPORTER_OTLP_* environment.
func (o *tracingOptions) exporter(ctx context.Context, proto string) (*otlptrace.Exporter, error) {
	if proto == otlpGRPC {
		var opts []otlptracegrpc.Option
		if o.endpoint != "" {
			if strings.Contains(o.endpoint, "://") {
				opts = append(opts, otlptracegrpc.WithEndpointURL(o.endpoint))
			} else {
				opts = append(opts, otlptracegrpc.WithEndpoint(o.endpoint))
			}
		}
		if o.insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if o.endpoint != "" {
		u, err := url.Parse(o.endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, usageError("--otlp-endpoint %q: want an http:// or https:// URL for http/protobuf", o.endpoint)
		}
		// A base URL gets the signal's path, as OTEL_EXPORTER_OTLP_ENDPOINT does.
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(u.String()))
	}
	if o.insecure {
		opts = append(opts, otlptracehttp.WithInsecure())
	}
	return otlptracehttp.New(ctx, opts...)
}

// traceFlushTimeout bounds the export of the last spans on shutdown.
const traceFlushTimeout = 5 * time.Second

// flushTraces exports the spans not exported yet and stops the exporter, within traceFlushTimeout.
func flushTraces(shutdown func(context.Context) error, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		log.Warn("flushing traces", "err", err)
	}
}
