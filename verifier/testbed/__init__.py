"""Ground-truth testbeds: small causal LMs whose training membership is known exactly (``build``;
the text pools they are built from: ``pool``)."""
