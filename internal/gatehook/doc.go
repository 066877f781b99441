// Package gatehook gives the module's own packages (the supervisor) what
// they read of a tool gate that no integrator needs: its lease, which an
// integrator set in the gate's Config (or left at its documented default)
// and so already knows. Package toolgate sets the hook when it is
// initialised; the argument is a *toolgate.Gate (this package sits below
// the gate and cannot name its type).
//
// The hook is set once, when package toolgate is initialised, and only
// read after that, so it is safe for concurrent use.
package gatehook
