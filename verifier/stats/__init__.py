"""Statistics: membership metrics with intervals (``metrics``), batched logistic regression
(``logistic``), exact rank tests (``rank``) and the trials of marks among their siblings
(``rank_trials``), and how numbers are written in report sections (``formats``). The package face
imports nothing, so a module that needs one exact test does not load scikit-learn."""
