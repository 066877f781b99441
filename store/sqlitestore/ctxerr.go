package sqlitestore

import "context"

// ctxErr returns ctx's error in place of err when ctx is done and the call
// failed. A call cut short by its context fails wherever the cancellation
// caught it: database/sql may report a transaction it rolled back as
// done (sql.ErrTxDone), the driver an interrupted statement, a scan no
// rows. None of these says why; the context's error does, and callers test
// for it with errors.Is(err, context.Canceled) or
// context.DeadlineExceeded. A call that succeeded is kept: its effect
// happened.
func ctxErr(ctx context.Context, err error) error {
	if mutCancelError {
		return err
	}
	return ctxErrChecked(ctx, err)
}

// ctxErrChecked is ctxErr's work.
func ctxErrChecked(ctx context.Context, err error) error {
	if err == nil {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}
