// Package column decodes the columns the SQL stores keep a record's enums
// and payload in, so that SQLite and PostgreSQL read them back the same
// way and name a corrupt column the same way.
package column
