// Package config owns the service configuration: read from a Java
// properties file, overridden by the environment and by flags, validated as
// a whole with errors that name the key, the source and the line.
package config
