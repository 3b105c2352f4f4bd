// Relative asset URLs, so the built page works under any path of the test server.
export default { base: './', logLevel: 'warn', build: { target: 'es2022', chunkSizeWarningLimit: 20_000 } };
