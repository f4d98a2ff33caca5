-- busted helper (named in .busted): loads cuscan before busted takes the snapshot of
-- package.loaded that it restores after each spec file. The module then stays loaded for the
-- whole run, as in any other program, instead of being loaded again for every file while its FFI
-- declarations, metatypes and library stay process-wide.
require("cuscan")
require("cuscan.assertions")
