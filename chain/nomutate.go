//go:build !bkmutate

package chain

// The switches of mutate.go, off.
func mutSkipGap() bool    { return false }
func mutSkipOrder() bool  { return false }
func mutSkipLink() bool   { return false }
func mutSkipStatus() bool { return false }
func mutSkipHead() bool   { return false }
func mutSkipTail() bool   { return false }
func mutSkipSig() bool    { return false }
func mutSkipSeq() bool    { return false }

func mutSkipBundleBytes() bool { return false }
