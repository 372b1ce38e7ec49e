"""How numbers are written in findings' report sections: one spelling for every route."""


def num(value: float | None, digits: int = 4) -> str:
    """A number to ``digits`` decimals; "-" for none."""
    return "-" if value is None else f"{value:.{digits}f}"


def pval(value: float | None) -> str:
    """A p-value to three significant digits; "-" for none."""
    return "-" if value is None else f"{value:.3g}"
