"""A kernel package written for loopsim's tests in the style of a production kernel library:
package-relative imports, a configuration object, a tile-iterator helper, access patterns."""
