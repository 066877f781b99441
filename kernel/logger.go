package kernel

import "log/slog"

// Logger returns the logger [Config.Logger] set, or one that discards
// everything: what a component built on the kernel (the tool gate) logs
// through, so that the application configures one logger.
func (k *Kernel) Logger() *slog.Logger { return k.log }
