// Package kernelhook gives the module's own packages (the tool gate, the
// supervisor, the inspector) what they read of a kernel that no integrator
// needs: its clock and its namespace, which an integrator set in the
// kernel's Config and so already knows. Package kernel sets the hooks when
// it is initialised; the arguments are *kernel.Kernel values (this package
// sits below the kernel and cannot name its type).
//
// The hooks are set once, when package kernel is initialised, and only
// read after that, so they are safe for concurrent use.
package kernelhook
