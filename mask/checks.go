package mask

// Each function below reads one mutation switch (mutate.go), so that no
// logic runs past a switch.

// erasesKey reports whether Erase destroys the trace's key (always, but
// for the mutation switch mask.erase).
func erasesKey() bool { return !mutErase }

// keysPerNamespace reports whether a trace's key is its namespace's own
// (always, but for the mutation switch mask.key_namespace).
func keysPerNamespace() bool { return !mutKeyNamespace }
