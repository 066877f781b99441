// Package pgstore is a [kernel.Store] on PostgreSQL.
package pgstore
