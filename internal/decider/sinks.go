package decider

import (
	"bufio"
	"io"
	"sync/atomic"

	"gopkg.in/natefinch/lumberjack.v2"
)

// Sink receives the decision log's encoded records. The log calls Write, Flush and Close from its
// one goroutine, never concurrently; Write gets one JSON line ending in '\n' that it must copy to
// keep. A sink must not block the log for long (the HTTP sink only queues), and counts what it
// wrote and what it dropped.
type Sink interface {
	// Write takes one record.
	Write(line []byte)
	// Flush writes what the sink buffers.
	Flush()
	// Close flushes and releases the sink; nothing is written after it.
	Close()
	// Stats returns the sink's name and counters; it is safe to call from any goroutine.
	Stats() SinkStats
}

// SinkStats are a sink's counters, reported in tollgate_decision_log_written_total and
// tollgate_decision_log_dropped_total under the label sink=Name, and in /v1/status.
type SinkStats struct {
	// Name identifies the sink: stdout, stderr, file, http (or QueueSink for the log's own buffer).
	Name string `json:"sink"`
	// Written counts records the sink wrote (the HTTP sink: delivered and acknowledged).
	Written uint64 `json:"written"`
	// Dropped counts records the sink lost: a failed write, a full buffer, a rejected batch.
	Dropped uint64 `json:"dropped"`
}

// WriterSink writes records to an io.Writer through a 64 KiB buffer (flushed every 100ms by the
// log): stdout, stderr, or a file. A failed write drops the records it held.
type WriterSink struct {
	name    string
	w       io.Writer
	out     *bufio.Writer
	closer  io.Closer
	pending uint64 // records in out not flushed yet
	written atomic.Uint64
	dropped atomic.Uint64
}

// NewWriterSink returns a sink named name writing to w.
func NewWriterSink(name string, w io.Writer) *WriterSink {
	return &WriterSink{name: name, w: w, out: bufio.NewWriterSize(w, 64<<10)}
}

// Write buffers line.
func (s *WriterSink) Write(line []byte) {
	if s.out.Buffered()+len(line) > s.out.Size() {
		s.Flush()
	}
	if _, err := s.out.Write(line); err != nil {
		s.dropped.Add(s.pending + 1)
		s.pending = 0
		s.out.Reset(s.w)
		return
	}
	s.pending++
}

// Flush writes the buffered records; when that fails they are counted as dropped and discarded.
func (s *WriterSink) Flush() {
	if s.pending == 0 {
		return
	}
	if err := s.out.Flush(); err != nil {
		s.dropped.Add(s.pending)
		s.out.Reset(s.w) // bufio.Writer keeps a write error: start afresh, the failed lines lost
	} else {
		s.written.Add(s.pending)
	}
	s.pending = 0
}

// Close flushes and closes the underlying file, if the sink owns one.
func (s *WriterSink) Close() {
	s.Flush()
	if s.closer != nil {
		_ = s.closer.Close()
	}
}

// Stats returns the sink's counters.
func (s *WriterSink) Stats() SinkStats {
	return SinkStats{Name: s.name, Written: s.written.Load(), Dropped: s.dropped.Load()}
}

// FileConfig configures the rotating file sink.
type FileConfig struct {
	// Path is the file; rotated files sit beside it (name-<timestamp>.ext, gzip-compressed when
	// Compress).
	Path string
	// MaxSizeMB rotates the file when it would grow beyond this many megabytes (default 100).
	MaxSizeMB int
	// MaxBackups is how many rotated files are kept (0 keeps all, subject to MaxAgeDays).
	MaxBackups int
	// MaxAgeDays removes rotated files older than this many days (0 keeps them).
	MaxAgeDays int
	// Compress gzips rotated files.
	Compress bool
}

// NewFileSink returns a sink named "file" appending to cfg.Path and rotating it by size
// (gopkg.in/natefinch/lumberjack.v2). The file is opened on the first write.
func NewFileSink(cfg FileConfig) *WriterSink {
	lj := &lumberjack.Logger{Filename: cfg.Path, MaxSize: cfg.MaxSizeMB, MaxBackups: cfg.MaxBackups,
		MaxAge: cfg.MaxAgeDays, Compress: cfg.Compress, LocalTime: false}
	s := NewWriterSink("file", lj)
	s.closer = lj
	return s
}
