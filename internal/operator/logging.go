package operator

import (
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	crzap "sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// NewLogger builds the process logger: zap through controller-runtime's logr adapter, writing to w.
//
// Records carry an RFC 3339 timestamp under "ts" rather than zap's default epoch float, because people
// read these logs too. Stack traces are attached only from DPanic up: operator errors are expected
// events (an unreachable etcd member, a conflict) whose wrapped messages already say what was being
// done, and a stack per error would bury them.
func NewLogger(opts LogOptions, w io.Writer) logr.Logger {
	encoderConfig := func(c *zapcore.EncoderConfig) {
		c.TimeKey = "ts"
		c.EncodeTime = zapcore.RFC3339NanoTimeEncoder
	}
	encoder := crzap.JSONEncoder(encoderConfig)
	if opts.Format == LogFormatConsole {
		encoder = crzap.ConsoleEncoder(encoderConfig)
	}
	return crzap.New(
		crzap.WriteTo(w),
		crzap.Level(opts.Level),
		crzap.StacktraceLevel(zapcore.DPanicLevel),
		encoder,
	)
}
