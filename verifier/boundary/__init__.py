"""Where bytes cross verifier's boundary: other parties' servers (``peers``), users' YAML
(``safe_yaml``), untrusted text shown (``display``), files written atomically (``atomic``) and the
files shipped inside the package (``resources``)."""
