"""The visibility descriptor of a `descriptor` call (the C ABI's attncheck_visibility,
FlashAttention's convention): its fields as attributes, the blocked mask it
describes and the paged K/V read back onto the logical key axis."""

import numpy as np

_SCALARS = (("causal", 0), ("window_left", -1), ("window_right", -1), ("num_sequences", 0), ("chunk", 0),
            ("alibi_max_bias", 0.0), ("softcap", 0.0), ("page_size", 0), ("max_blocks", 0), ("num_pages", 0))
_INT_ARRAYS = ("cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k", "leftpad_k", "prefix_len", "block_table")


class Descriptor:
    """Attributes: causal (0 none, 1 top-left, 2 bottom-right), window_left,
    window_right (-1 unbounded), num_sequences, chunk, alibi_max_bias, softcap,
    page_size, max_blocks, num_pages; int arrays or None: cu_seqlens_q,
    cu_seqlens_k, seqused_q, seqused_k, leftpad_k, prefix_len, block_table
    ([num_sequences, max_blocks]); float alibi_slopes or None; raw (the dict)."""

    def __init__(self, raw):
        self.raw = dict(raw)
        for name, default in _SCALARS:
            setattr(self, name, type(default)(raw.get(name, default)))
        for name in _INT_ARRAYS:
            setattr(self, name, np.asarray(raw[name], dtype=np.int64) if name in raw else None)
        if self.block_table is not None:
            self.block_table = self.block_table.reshape(self.num_sequences, self.max_blocks)
        self.alibi_slopes = np.asarray(raw["alibi_slopes"], dtype=np.float64) if "alibi_slopes" in raw else None

    @classmethod
    def from_json(cls, raw):
        return cls(raw)

    @property
    def varlen(self):
        return self.cu_seqlens_q is not None

    @property
    def paged(self):
        return self.page_size > 0

    def __repr__(self):
        return f"Descriptor({self.raw!r})"

    def blocked(self, batch, tq, tk):
        """blocked [B, Tq, Tk] (True = not visible), FlashAttention's rule (block_info.h,
        mask.h): row b's keys are slots [leftpad_k, seqused_k), its real queries rows
        [0, seqused_q); query i's diagonal is i (causal 1) or i + nk - nq; key j is
        inside causal, the window and the chunk of the diagonal, or in the prefix when
        the diagonal is. Varlen: batch 1, sequence s a diagonal block of the packed axes."""
        blocked = np.ones((batch, tq, tk), dtype=bool)
        if self.varlen:
            cq, ck = self.cu_seqlens_q, self.cu_seqlens_k
            for s in range(self.num_sequences):
                nq, nk = cq[s + 1] - cq[s], ck[s + 1] - ck[s]
                prefix = self.prefix_len[s] if self.prefix_len is not None else 0
                blocked[0, cq[s]:cq[s + 1], ck[s]:ck[s + 1]] = self._sequence_blocked(nq, nk, 0, prefix, nq, nk)
            return blocked
        for b in range(batch):
            nq = self.seqused_q[b] if self.seqused_q is not None else tq
            pad = self.leftpad_k[b] if self.leftpad_k is not None else 0
            nk = (self.seqused_k[b] if self.seqused_k is not None else tk) - pad
            prefix = self.prefix_len[b] if self.prefix_len is not None else 0
            blocked[b] = self._sequence_blocked(nq, nk, pad, prefix, tq, tk)
        return blocked

    def _sequence_blocked(self, nq, nk, pad, prefix, tq, tk):
        """blocked [tq, tk] of one sequence: nq real queries, nk keys after `pad` slots."""
        i = np.arange(tq)[:, None]
        j = np.arange(tk)[None, :] - pad
        diagonal = i if self.causal == 1 else i + nk - nq
        seen = (i < nq) & (j >= 0) & (j < nk)
        inside = np.ones((tq, tk), dtype=bool)
        if self.causal != 0:
            inside &= j <= diagonal
        if self.window_left >= 0:
            inside &= j >= diagonal - self.window_left
        if self.window_right >= 0:
            inside &= j <= diagonal + self.window_right
        if self.chunk > 0:
            inside &= (j // self.chunk) == (diagonal // self.chunk)
        in_prefix = (diagonal >= 0) & (diagonal < prefix) & (j < prefix)
        return ~(seen & (inside | in_prefix))

    def unpage(self, pages, batch, tk):
        """pages [num_pages, Hkv, page_size, dim] -> [batch, Hkv, tk, dim] through the
        block table: sequence s's key j is at page block_table[s][j // page_size],
        offset j % page_size; it is batch row s, slot j (padded batch, j < seqused_k)
        or batch 0, slot cu_seqlens_k[s] + j (varlen). Slots in no sequence are NaN.
        A torch tensor comes back a torch tensor of its dtype and device."""
        if type(pages).__module__.startswith("torch"):
            import torch
            out = self.unpage(pages.detach().float().cpu().numpy(), batch, tk)
            return torch.from_numpy(out).to(dtype=pages.dtype, device=pages.device)
        pages = np.asarray(pages)
        expected = (self.num_pages, pages.shape[1], self.page_size)
        if pages.shape[:3] != expected:
            raise ValueError(f"paged k/v of shape {list(pages.shape)}, expected [num_pages, Hkv, page_size, dim] = "
                             f"{list(expected) + [pages.shape[3]]}")
        dtype = pages.dtype if pages.dtype.kind == "f" else np.float32
        out = np.full((batch, pages.shape[1], tk, pages.shape[3]), np.nan, dtype)
        for s in range(self.num_sequences):
            if self.varlen:
                row, first, n = 0, self.cu_seqlens_k[s], self.cu_seqlens_k[s + 1] - self.cu_seqlens_k[s]
            else:
                row, first, n = s, 0, self.seqused_k[s] if self.seqused_k is not None else tk
            j = np.arange(n)
            page = self.block_table[s, j // self.page_size]
            out[row, :, first:first + n, :] = pages[page, :, j % self.page_size, :].transpose(1, 0, 2)
        return out
