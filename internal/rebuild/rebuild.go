package rebuild

import "context"

type key struct{}

// Context returns ctx marked as a rebuild.
func Context(ctx context.Context) context.Context { return context.WithValue(ctx, key{}, true) }

// From reports whether ctx is marked as a rebuild.
func From(ctx context.Context) bool {
	on, _ := ctx.Value(key{}).(bool)
	return on
}
